// Package fence gives fencing tokens a type and helps a resource refuse
// writes from an older leadership term.
//
// A lease alone cannot stop a leader that was paused (by a garbage
// collector, a stopped VM, a slow disk) from writing after its term ended and
// another node took over. A fencing token can: every term carries a token
// larger than any before it, the writer sends its token with each write, and
// the resource remembers the highest token it accepted and refuses lower
// ones.
//
// [WithToken] and [FromContext] carry the token of the current term in a
// context.Context; [Register] is an in-process resource guard. The
// subpackages pgfence, redisfence and etcdfence make writes to
// PostgreSQL, Redis and etcd conditional on a token.
package fence
