package incluster

// InClusterParams lets the external tests build parameters as build_test.go does.
var InClusterParams = inClusterParams
