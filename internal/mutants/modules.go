package mutants

// Modules are the directories of the modules whose tests make test runs,
// the root module first (every mutated file is in it). A test checks them
// against the Makefile.
var Modules = []string{".", "examples/simuser", "examples/customstore", "examples/gocron", "controllerruntime", "tools/browser", "otel", "deploy"}
