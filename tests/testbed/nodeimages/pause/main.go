// Command pause is the test node's sandbox image: it holds a pod's namespaces until it is told to
// stop, like Kubernetes' pause (which cannot be pulled here: the test bed is offline).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
