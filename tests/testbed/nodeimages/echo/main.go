// Command echo is the test node's backend image: an HTTP server on :8080 that answers every request
// with "<pod> <method> <host><path>", the pod being $POD_NAME (or the hostname), so that a test sees
// which replica served it.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	pod := os.Getenv("POD_NAME")
	if pod == "" {
		pod, _ = os.Hostname()
	}
	srv := &http.Server{Addr: ":8080", ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s%s\n", pod, r.Method, r.Host, r.URL.RequestURI())
	})}
	log.Printf("%s serving on %s", pod, srv.Addr)
	log.Fatal(srv.ListenAndServe())
}
