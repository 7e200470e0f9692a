// Package report presents a driver.Report (the result of `distcache bench`):
// readable tables (WriteText), the JSON document (WriteJSON), a PNG of the
// throughput timelines and the members' utilisation (WritePNG), and a
// progress bar for a running benchmark (ProgressBar).
//
// The figures follow the DistCache paper's evaluation (Liu et al., FAST '19,
// §6): throughput is normalised to one storage server's capacity, the
// largest rate at which no cache node and no server is over its capacity;
// the failure timeline is drawn as in the paper's fig. 11. When capacities
// are emulated by rate limits, as on the paper's testbed (§6.1), the text
// says so.
package report
