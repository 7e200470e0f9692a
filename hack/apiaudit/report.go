package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// writeMarkdown prints the counts as Markdown: the window, a table per
// client, a table per client, verb and resource.
func (c counts) writeMarkdown(out io.Writer, o options) error {
	w := bufio.NewWriter(out)
	minutes := c.window.minutes()
	perMin := func(n int) string { return fmt.Sprintf("%.1f", float64(n)/minutes) }
	fmt.Fprintf(w, "Window: %s to %s (%s).", c.window.since.Format(time.RFC3339Nano),
		c.window.until.Format(time.RFC3339Nano), c.window.until.Sub(c.window.since))
	if o.user != nil {
		fmt.Fprintf(w, " Users matching `%s`.", o.user)
	}
	fmt.Fprintf(w, " A request counts once, when the API server received it; a watch once, when it started.\n\n")
	if len(c.clients) == 0 {
		fmt.Fprintln(w, "No request in the window.")
		return flush(w)
	}

	fmt.Fprintln(w, "| user | pod | source IPs | user agent | requests | per minute |")
	fmt.Fprintln(w, "|---|---|---|---|---:|---:|")
	for _, cc := range c.clients {
		cl := cc.client
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s |\n", cell(cl.user), cell(cl.pod), cell(cl.sourceIPs),
			cell(cl.userAgent), cc.total, perMin(cc.total))
	}
	n := len(c.clients)
	clients := "clients"
	if n == 1 {
		clients = "client"
	}
	fmt.Fprintf(w, "| **all %d %s** | | | | **%d** | **%s** |\n", n, clients, c.total, perMin(c.total))
	fmt.Fprintf(w, "| **mean per client** | | | | %.1f | %.1f |\n\n", float64(c.total)/float64(n), float64(c.total)/float64(n)/minutes)

	if o.names {
		fmt.Fprintln(w, "| user | pod | source IPs | user agent | verb | resource | name | requests | per minute |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---:|---:|")
	} else {
		fmt.Fprintln(w, "| user | pod | source IPs | user agent | verb | resource | requests | per minute |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---:|---:|")
	}
	for _, cc := range c.clients {
		cl := cc.client
		for _, k := range cc.sortedOps() {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |", cell(cl.user), cell(cl.pod), cell(cl.sourceIPs),
				cell(cl.userAgent), cell(k.verb), cell(k.resource))
			if o.names {
				fmt.Fprintf(w, " %s |", cell(k.name))
			}
			fmt.Fprintf(w, " %d | %s |\n", cc.ops[k], perMin(cc.ops[k]))
		}
	}
	return flush(w)
}

// cell is s as a Markdown table cell: pipes escaped, "–" when empty.
func cell(s string) string {
	if s == "" {
		return "–"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func flush(w *bufio.Writer) error {
	if err := w.Flush(); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}
