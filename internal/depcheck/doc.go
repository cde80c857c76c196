// Package depcheck holds the tests of the module's import graph, with go
// list -deps: a program importing lead and one store builds none of the
// other stores' client libraries (see README.md, "Build time"), and no
// production package imports the test harness (internal/testing/: the
// real servers, chaos runs, the scale benchmark, the docs check), which
// only tests may import.
package depcheck
