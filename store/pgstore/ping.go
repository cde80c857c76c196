package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// readKey marks the context of a pool Acquire made for a read (see
// ShouldPing).
type readKey struct{}

// forRead returns ctx marked as a read's, for ShouldPing.
func forRead(ctx context.Context) context.Context { return context.WithValue(ctx, readKey{}, true) }

// ShouldPing returns a hook for pgxpool.Config.ShouldPing that skips the
// ping pgxpool sends on a connection it hands out, for the Store's reads
// (Get, List, and a watch's reads of a row), and otherwise asks next (nil:
// pgxpool's own rule, a ping after a second idle). By default pgxpool
// pings a connection idle for more than a second before handing it out,
// so a quiet follower, which reads once per LeaseDuration, sends a ping
// with every read: twice its requests. A read needs no ping: one that
// meets a broken connection fails and is tried again on another (as
// after a ping that failed), and a read changes nothing. Swaps keep the
// ping: a write sent on a connection that broke while idle may leave its
// outcome unknown. Set it when making the pool:
//
//	cfg, err := pgxpool.ParseConfig(dsn)
//	if err != nil {
//		return err
//	}
//	cfg.ShouldPing = pgstore.ShouldPing(cfg.ShouldPing)
//	pool, err := pgxpool.NewWithConfig(ctx, cfg)
func ShouldPing(next func(context.Context, pgxpool.ShouldPingParams) bool) func(context.Context, pgxpool.ShouldPingParams) bool {
	return func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
		if read, _ := ctx.Value(readKey{}).(bool); read {
			return false
		}
		if next != nil {
			return next(ctx, p)
		}
		return p.IdleDuration > time.Second
	}
}
