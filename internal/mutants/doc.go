// Package mutants keeps a catalogue of deliberate unsafe changes to
// Tenure (mutants) and runs them: the test suite proves its own strength
// by failing on every one.
//
// Each entry (see Catalogue) names a file, an exact piece of its text and
// what replaces it (a one-line to few-line change), says in one sentence
// why the change is unsafe (a way to get two leaders, a reused or lower
// token, a fence accepting a stale write, a body running outside its
// term), and names the packages whose tests are expected to catch it. An
// entry whose original text does not occur exactly once in its file is an
// error, not a pass: TestCatalogueMatchesTheCode fails as soon as the code
// under a mutant changes, and the entry must be updated with it.
//
// make mutants runs cmd/mutants, which for each entry, in a scratch copy
// of the repository at a fixed path ($TMPDIR/tenure-mutants, so that Go's
// build cache serves every run; uncommitted changes are copied too):
//
//  1. applies the change and runs go vet on the package (an entry that
//     does not compile is a catalogue error, never a catch);
//  2. runs go test -count=1 -failfast, with GOTESTFLAGS (-race in CI) and
//     the environment (TENURE_REQUIRE_BACKENDS) passed through: first the
//     expected packages limited to the entry's Tests, then the expected
//     packages whole, then every package of make test whose test binary
//     builds the mutated package (go list -test), in each module make test
//     tests (Modules);
//  3. stops at the first failing test and prints one line: the entry's
//     name, "caught by pkg.TestName", SURVIVED, UNDECIDED or ERROR, and
//     the seconds it took. A failure in a package the entry did not name
//     counts only once confirmed: the test fails again alone with the
//     change and passes without it (a test that fails under load whatever
//     the code is no catch). UNDECIDED: not confirmed, or the entry's
//     budget (-timeout) ran out;
//  4. puts the file back.
//
// It exits non-zero unless every entry was caught. MUTANTS=fast make
// mutants (or make mutants-fast) runs the entries marked Fast, which CI
// runs after make test; -run selects entries by name, -list prints them,
// and -expected-only skips the dependent packages (a quick first pass:
// what survives it needs the full run).
//
// To add a mutant: write the change as a Mutant in catalogue.go, in the
// group of its package, with the mistake it models in Reason; run
// go run ./internal/mutants/cmd/mutants -run '^name$' and check that it
// is caught, by the test you expect. A mutant that survives is a gap in
// the tests: add a test of the behaviour it breaks, never weaken the
// mutant.
package mutants
