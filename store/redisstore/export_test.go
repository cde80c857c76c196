package redisstore

// SetListBatch makes List SCAN with COUNT n and read n keys a pipeline,
// until the returned function puts the defaults back.
func SetListBatch(n int) (restore func()) {
	oldScan, oldBatch := listScanCount, listBatch
	listScanCount, listBatch = int64(n), n
	return func() { listScanCount, listBatch = oldScan, oldBatch }
}
