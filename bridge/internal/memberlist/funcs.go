package memberlist

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
)

// Func is the Go signature of a function an export may call.
type Func struct {
	Params  []GoParam
	Results []string // the result types: "bool", "error"
	// imports maps each package name its file uses to the package's path.
	imports map[string]string
}

// GoParam is one parameter of a Func.
type GoParam struct{ Name, Type string }

// Funcs are the functions an export may call: the methods of the Backend
// interface, called on the backend the table serves; the functions of
// package backend that take that backend first (a member that is one
// Step: backend/step.go), called with it; and the functions of package
// bridge.
type Funcs struct {
	Backend map[string]Func
	// Steps are the functions of package backend whose first parameter is
	// a Stepper or a Backend, without that parameter.
	Steps map[string]Func
	// BackendPath is package backend's import path.
	BackendPath string
	Bridge      map[string]Func
}

// ReadFuncs reads the Backend interface and the functions that take one
// first from the Go files of backendDir (package backendPath), and the
// top-level functions of bridgeDir (neither its tests nor what is
// generated into it).
func ReadFuncs(backendDir, backendPath, bridgeDir string) (Funcs, error) {
	fs := Funcs{Backend: map[string]Func{}, Steps: map[string]Func{}, BackendPath: backendPath, Bridge: map[string]Func{}}
	backendFiles, err := parseDir(backendDir)
	if err != nil {
		return fs, err
	}
	interfaces := map[string]*ast.InterfaceType{}
	fileOf := map[string]*ast.File{}
	for _, f := range backendFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					interfaces[ts.Name.Name] = it
					fileOf[ts.Name.Name] = f
				}
			}
			return true
		})
	}
	var addMethods func(name string) error
	addMethods = func(name string) error {
		it, ok := interfaces[name]
		if !ok {
			return fmt.Errorf("memberlist: no interface %s in %s", name, backendDir)
		}
		for _, m := range it.Methods.List {
			ft, ok := m.Type.(*ast.FuncType)
			if !ok { // an embedded interface of the package
				id, ok := m.Type.(*ast.Ident)
				if !ok {
					return fmt.Errorf("memberlist: %s embeds %s, which is not an interface of its package", name, types.ExprString(m.Type))
				}
				if err := addMethods(id.Name); err != nil {
					return err
				}
				continue
			}
			for _, n := range m.Names {
				fs.Backend[n.Name] = signature(ft, fileOf[name])
			}
		}
		return nil
	}
	if err := addMethods("Backend"); err != nil {
		return fs, err
	}
	for _, f := range backendFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() {
				continue
			}
			if fn := signature(fd.Type, f); len(fn.Params) > 0 && (fn.Params[0].Type == "Stepper" || fn.Params[0].Type == "Backend") {
				fn.Params = fn.Params[1:]
				fs.Steps[fd.Name.Name] = fn
			}
		}
	}
	bridgeFiles, err := parseDir(bridgeDir)
	if err != nil {
		return fs, err
	}
	for _, f := range bridgeFiles {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				fs.Bridge[fd.Name.Name] = signature(fd.Type, f)
			}
		}
	}
	return fs, nil
}

func parseDir(dir string) ([]*ast.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_gen.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func signature(ft *ast.FuncType, file *ast.File) Func {
	fn := Func{imports: map[string]string{}}
	for _, imp := range file.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		fn.imports[name] = path
	}
	for _, p := range ft.Params.List {
		for _, n := range p.Names {
			fn.Params = append(fn.Params, GoParam{n.Name, types.ExprString(p.Type)})
		}
	}
	if ft.Results != nil {
		for _, r := range ft.Results.List {
			for range max(1, len(r.Names)) {
				fn.Results = append(fn.Results, types.ExprString(r.Type))
			}
		}
	}
	return fn
}
