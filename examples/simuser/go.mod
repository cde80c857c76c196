module github.com/tenure-go/tenure/examples/simuser

go 1.26.0

require github.com/tenure-go/tenure v0.0.0

require github.com/google/go-cmp v0.7.0 // indirect

replace github.com/tenure-go/tenure => ../..
