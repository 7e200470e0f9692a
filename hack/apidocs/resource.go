package main

import (
	"fmt"
	"strconv"
	"strings"
)

// resourceInfo is how a kind is served: its resource name, scope and what
// kubectl shows of it.
type resourceInfo struct {
	plural       string
	scope        string
	shortNames   []string
	categories   []string
	subresources []string
	columns      []column
}

// column is a printer column of kubectl get.
type column struct {
	name        string
	typ         string
	jsonPath    string
	description string
	priority    int
}

// resourceOf reads a kind's resource markers.
func resourceOf(k *apiType) (resourceInfo, error) {
	res := resourceInfo{plural: plural(strings.ToLower(k.name)), scope: "Namespaced"}
	for _, m := range k.markers.all("kubebuilder:resource") {
		if v := m.args["path"]; v != "" {
			res.plural = v
		}
		if v := m.args["scope"]; v != "" {
			res.scope = v
		}
		if v := m.args["shortName"]; v != "" {
			res.shortNames = strings.Split(v, ";")
		}
		if v := m.args["categories"]; v != "" {
			res.categories = strings.Split(v, ";")
		}
	}
	for _, m := range k.markers {
		if sub, ok := strings.CutPrefix(m.name, "kubebuilder:subresource:"); ok {
			res.subresources = append(res.subresources, sub)
		}
	}
	for _, m := range k.markers.all("kubebuilder:printcolumn") {
		c := column{name: m.args["name"], typ: m.args["type"], jsonPath: m.args["JSONPath"], description: m.args["description"]}
		if p := m.args["priority"]; p != "" {
			n, err := strconv.Atoi(p)
			if err != nil {
				return res, fmt.Errorf("cannot read the priority of column %s of %s: %w", c.name, k.name, err)
			}
			c.priority = n
		}
		res.columns = append(res.columns, c)
	}
	return res, nil
}

// plural is the plural of a lower-case kind, as controller-gen forms the
// common ones.
func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}
