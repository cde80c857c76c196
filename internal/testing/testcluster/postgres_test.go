package testcluster

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startPostgres starts a cluster of the test's own, closed at its end. (The
// tests of this package do not use PackagePostgres, so that they need no
// TestMain of their own.)
func startPostgres(t *testing.T) *Postgres {
	t.Helper()
	pg, err := StartPostgres()
	if err != nil {
		Unavailable(t, "PostgreSQL is unavailable: %v", err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	return pg
}

func pgQueryInt(t *testing.T, dsn, sql string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestPostgresLifecycle(t *testing.T) {
	pg := startPostgres(t)
	if pg.Port() == 5432 {
		t.Fatalf("the private cluster must not use the system port 5432")
	}
	if !pg.Running() {
		t.Fatalf("Running() = false after start")
	}
	if got := pgQueryInt(t, pg.DSN(), "SELECT 41 + 1"); got != 42 {
		t.Fatalf("SELECT 41 + 1 = %d", got)
	}
	// Data written before a restart is there after it, on the same DSN.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE lifecycle (n int); INSERT INTO lifecycle VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	port := pg.Port()
	if err := pg.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if pg.Port() != port {
		t.Fatalf("port changed across Restart: %d -> %d", port, pg.Port())
	}
	if got := pgQueryInt(t, pg.DSN(), "SELECT n FROM lifecycle"); got != 7 {
		t.Fatalf("after Restart: n = %d, want 7", got)
	}

	if err := pg.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if pg.Running() {
		t.Fatalf("Running() = true after Stop")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if c, err := pgx.Connect(cctx, pg.DSN()); err == nil {
		_ = c.Close(ctx)
		t.Fatalf("connected to a stopped server")
	}
	cancel()
	if err := pg.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	if err := pg.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := pg.Crash(); err != nil {
		t.Fatalf("Crash: %v", err)
	}
	if err := pg.Start(); err != nil {
		t.Fatalf("Start after Crash: %v", err)
	}
	if got := pgQueryInt(t, pg.DSN(), "SELECT n FROM lifecycle"); got != 7 {
		t.Fatalf("after Crash and Start: n = %d, want 7", got)
	}
}

func TestPackagePostgresIsShared(t *testing.T) {
	a := PackagePostgres(t)
	t.Cleanup(StopPackagePostgres)
	b := PackagePostgres(t)
	if a != b {
		t.Fatalf("PackagePostgres returned two clusters")
	}
	if got := pgQueryInt(t, a.DSN(), "SELECT 1"); got != 1 {
		t.Fatalf("SELECT 1 = %d", got)
	}
}

func TestPostgresCloseRemovesDirectory(t *testing.T) {
	pg := startPostgres(t)
	root := pg.root
	if err := pg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after Close (err %v)", root, err)
	}
	if err := pg.Start(); err == nil {
		t.Fatalf("Start after Close succeeded")
	}
}
