// Command standin stands in for the operator binary in the image builder's tests: building the
// real one for two architectures would cost minutes on a small machine.
package main

import "os"

var version = "dev"

func main() { _, _ = os.Stdout.WriteString("standin " + version + "\n") }
