// Package depcheck holds the test that a program importing lead and one
// store builds none of the other stores' client libraries, with go list
// -deps (see README.md, "Build time").
package depcheck
