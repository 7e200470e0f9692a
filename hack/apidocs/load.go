package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// load reads the API package in dir: its types, their doc comments and
// markers, and its constants. Tests and generated files are left out.
func load(dir string) (*api, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list the API package: %w", err)
	}
	a := &api{version: filepath.Base(dir), types: map[string]*apiType{}}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %s: %w", name, err)
		}
		if err := a.addFile(f); err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", name, err)
		}
		files = append(files, f)
	}
	a.addConstants(files)
	if a.group == "" {
		return nil, fmt.Errorf("cannot find the +groupName marker in the package comment of %s", dir)
	}
	for _, t := range a.types {
		if t.isRoot() && !strings.HasSuffix(t.name, "List") {
			a.kinds = append(a.kinds, t)
		}
	}
	sort.Slice(a.kinds, func(i, j int) bool { return a.kinds[i].name < a.kinds[j].name })
	if t := a.types["ConditionType"]; t != nil {
		a.conditions = t.values
	}
	return a, nil
}

// addFile adds a file's package comment, types and constants.
func (a *api) addFile(f *ast.File) error {
	if f.Doc != nil {
		_, ms, err := splitComment(f.Doc.Text())
		if err != nil {
			return err
		}
		if g, ok := ms.get("groupName"); ok {
			a.group = g
		}
	}
	imports := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return fmt.Errorf("cannot read import %s: %w", imp.Path.Value, err)
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = p
	}
	// Types first: constants name the types of the whole file.
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			comment := ts.Doc
			if comment == nil && len(gd.Specs) == 1 {
				comment = gd.Doc
			}
			t, err := newType(ts, comment, imports)
			if err != nil {
				return fmt.Errorf("cannot read type %s: %w", ts.Name.Name, err)
			}
			a.types[t.name] = t
		}
	}
	return nil
}

// addConstants adds the constants of every file, once all types are known.
func (a *api) addConstants(files []*ast.File) {
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				a.addConstant(spec.(*ast.ValueSpec))
			}
		}
	}
}

// addConstant adds a string constant to its type's values, or to the
// reasons when it is an untyped Reason* constant.
func (a *api) addConstant(vs *ast.ValueSpec) {
	if len(vs.Names) != 1 || len(vs.Values) != 1 {
		return
	}
	lit, ok := vs.Values[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return
	}
	value, err := strconv.Unquote(lit.Value)
	if err != nil {
		return
	}
	c := constant{name: vs.Names[0].Name, value: value, doc: commentText(vs.Doc)}
	if id, ok := vs.Type.(*ast.Ident); ok {
		if t := a.types[id.Name]; t != nil {
			t.values = append(t.values, c)
		}
		return
	}
	if vs.Type == nil && strings.HasPrefix(c.name, "Reason") {
		a.reasons = append(a.reasons, c)
	}
}

// newType reads a type declaration.
func newType(ts *ast.TypeSpec, comment *ast.CommentGroup, imports map[string]string) (*apiType, error) {
	doc, ms, err := splitComment(commentText(comment))
	if err != nil {
		return nil, err
	}
	t := &apiType{name: ts.Name.Name, doc: doc, markers: ms}
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		if id, ok := ts.Type.(*ast.Ident); ok {
			t.basic = id.Name
		}
		return t, nil
	}
	t.isStruct = true
	for _, f := range st.Fields.List {
		if err := t.addField(f, imports); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// addField adds a struct field: a JSON field, or the fields of an inlined
// embedded type.
func (t *apiType) addField(f *ast.Field, imports map[string]string) error {
	var tag reflect.StructTag
	if f.Tag != nil {
		s, err := strconv.Unquote(f.Tag.Value)
		if err != nil {
			return fmt.Errorf("cannot read a tag of %s: %w", t.name, err)
		}
		tag = reflect.StructTag(s)
	}
	name, opts, _ := strings.Cut(tag.Get("json"), ",")
	if name == "-" {
		return nil
	}
	ref, err := resolve(f.Type, imports)
	if err != nil {
		return fmt.Errorf("cannot read a field of %s: %w", t.name, err)
	}
	if name == "" && hasOpt(opts, "inline") {
		t.inline = append(t.inline, ref)
		return nil
	}
	if name == "" {
		return fmt.Errorf("cannot document a field of %s without a JSON name", t.name)
	}
	doc, ms, err := splitComment(commentText(f.Doc))
	if err != nil {
		return err
	}
	fd := &field{json: name, typ: ref, doc: doc, markers: ms}
	if len(f.Names) > 0 {
		fd.goName = f.Names[0].Name
	}
	// As controller-gen: optional when marked so or omitted when empty,
	// unless marked required.
	fd.optional = (ms.has("optional") || hasOpt(opts, "omitempty")) && !ms.has("required")
	t.fields = append(t.fields, fd)
	return nil
}

// resolve turns a field's type expression into a typeRef.
func resolve(e ast.Expr, imports map[string]string) (*typeRef, error) {
	switch e := e.(type) {
	case *ast.StarExpr:
		return resolve(e.X, imports)
	case *ast.Ident:
		if isBasic(e.Name) {
			return &typeRef{kind: refBasic, name: e.Name}, nil
		}
		return &typeRef{kind: refLocal, name: e.Name}, nil
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok || imports[x.Name] == "" {
			return nil, fmt.Errorf("cannot resolve the package of %s", e.Sel.Name)
		}
		return &typeRef{kind: refExternal, name: e.Sel.Name, pkg: imports[x.Name]}, nil
	case *ast.ArrayType:
		elem, err := resolve(e.Elt, imports)
		if err != nil {
			return nil, err
		}
		return &typeRef{kind: refSlice, elem: elem}, nil
	case *ast.MapType:
		key, err := resolve(e.Key, imports)
		if err != nil {
			return nil, err
		}
		elem, err := resolve(e.Value, imports)
		if err != nil {
			return nil, err
		}
		return &typeRef{kind: refMap, key: key, elem: elem}, nil
	}
	return nil, fmt.Errorf("cannot document a field of type %T", e)
}

func isBasic(name string) bool {
	switch name {
	case "string", "bool", "int", "int32", "int64", "uint32", "uint64", "float32", "float64", "byte":
		return true
	}
	return false
}

func hasOpt(opts, opt string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func commentText(c *ast.CommentGroup) string {
	if c == nil {
		return ""
	}
	return c.Text()
}
