package main

// version is stamped by `make image` (-X main.version=…); a plain `go build` says dev.
var version = "dev"
