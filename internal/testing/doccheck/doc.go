// Package doccheck checks that the Go code shown in Markdown compiles: it
// extracts the ```go fenced blocks of a document ([Extract]), completes
// each into a Go file as an example file of the guide would ([Complete]),
// and type-checks them all with go vet in a temporary module that replaces
// Tenure with the checkout ([Check]), without the network.
//
// A block that starts with a package clause is a whole file and is built
// as it is. Any other block is a fragment: its import declarations and its
// declarations of types and functions at the left margin stay at the top
// level, and the rest becomes the body of a function returning error.
// Names the fragment uses without declaring are resolved, in order, from
// the document's [Preamble] (the ctx, st and e the prose speaks of) and
// from the table of packages in [Packages]. An elided part is completed: a
// line holding only "..." is dropped, and "{ ... }" becomes a block that
// panics. Every variable the fragment declares in a function body is
// marked used, since an example need not use what it shows.
//
// A block preceded by the comment <!-- not compiled: REASON --> is not
// built; [Snippet.Skip] carries the reason.
package doccheck
