package claudecli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChildrenGoThroughTheReaper: no program file of the module starts a
// command made with exec.Command or exec.CommandContext itself (Run,
// Output, CombinedOutput, Start): once EnableReaper has run, a child the
// reaper does not know is reaped as an orphan before its Wait, which then
// fails with "waitid: no child processes" (as node --version did in the
// extension host's start). Such children go through RunCommand or
// StartChild (which need no reaper either); the reaper's own files are the
// exception.
func TestChildrenGoThroughTheReaper(t *testing.T) {
	allowed := map[string]string{
		"claudecli/reaper_linux.go": "the reaper itself",
		"claudecli/reaper_other.go": "no reaper there",
		"cmd/claude-rpc/doctor.go":  "doctor runs without the reaper",
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || allowed[rel] != "" || strings.HasPrefix(rel, "scripts/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		// The names given a command made by exec.Command(Context) ...
		cmds := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 && isExecCommand(as.Rhs[0]) {
				if id, ok := as.Lhs[0].(*ast.Ident); ok {
					cmds[id.Name] = true
				}
			}
			return true
		})
		// ... and their starts.
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			switch sel.Sel.Name {
			case "Run", "Output", "CombinedOutput", "Start":
				if ok && cmds[id.Name] {
					t.Errorf("%s: %s.%s() starts a child the reaper does not know: use claudecli.RunCommand or StartChild", fset.Position(call.Pos()), id.Name, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	}))
	assert.Greater(t, files, 100, "the module's program files were read")
}

// isExecCommand is whether e is a call of exec.Command or exec.CommandContext.
func isExecCommand(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "exec" && (sel.Sel.Name == "Command" || sel.Sel.Name == "CommandContext")
}
