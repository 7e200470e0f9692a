package main

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// paragraphs splits a doc comment into paragraphs, each on one line.
func paragraphs(doc string) []string {
	var out []string
	for _, p := range strings.Split(doc, "\n\n") {
		p = strings.Join(strings.Fields(p), " ")
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// prose renders doc comment text as Markdown paragraphs.
func prose(doc string) string {
	ps := paragraphs(doc)
	for i, p := range ps {
		ps[i] = escape(p)
	}
	return strings.Join(ps, "\n\n")
}

// cell renders doc comment text for a table cell: one line, pipes
// escaped.
func cell(doc string) string {
	ps := paragraphs(doc)
	for i, p := range ps {
		ps[i] = escape(p)
	}
	return escapePipes(strings.Join(ps, " "))
}

// firstParagraph is the first paragraph of a doc comment.
func firstParagraph(doc string) string {
	if ps := paragraphs(doc); len(ps) > 0 {
		return ps[0]
	}
	return ""
}

// escape keeps angle brackets outside code spans from reading as HTML.
func escape(s string) string {
	var b strings.Builder
	inCode := false
	for _, r := range s {
		switch {
		case r == '`':
			inCode = !inCode
			b.WriteRune(r)
		case r == '<' && !inCode:
			b.WriteString("&lt;")
		case r == '>' && !inCode:
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// escapePipes keeps pipes from ending a table cell, in code spans too.
func escapePipes(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// code renders s as a code span, with a fence longer than any run of
// backticks in it.
func code(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// codeList renders values as code spans separated by commas.
func codeList(values []string) string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = code(v)
	}
	return strings.Join(out, ", ")
}

// anchor is the fragment GitHub gives a heading.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// link renders a link to the section of a heading.
func link(heading string) string {
	return "[" + heading + "](#" + anchor(heading) + ")"
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}
