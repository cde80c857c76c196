// Package picture draws one recorded simulator run (a timeline.Timeline)
// as a self-contained HTML page with an inline SVG: a lane per node with
// its follower, candidate, leader and expiring spans and each term's
// token, the faults where they hit, a lane of the store's writes
// (accepted and conflicting), and the checks' verdict marked at its
// instant, with the leader spans that overlap at a violation outlined. A
// few lines of inline script zoom and pan it; nothing is fetched.
//
// The page's size is bounded whatever the run's length: a lane draws at
// most Cols+1 spans (spans shorter than 1/Cols of the run merge, showing
// the most telling state), the store lane at most Cols marks of each
// kind, and the faults and the tables at most MaxRows entries each.
//
// It reads the timeline and nothing else; packages sim and sim/internal/rt
// record it.
package picture
