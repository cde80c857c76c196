package kubestore

// SetListPage makes List ask for n records a request, until the returned
// function puts the default back.
func SetListPage(n int64) (restore func()) {
	old := listPage
	listPage = n
	return func() { listPage = old }
}
