package codec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// hostActionOrigin is the origin type of an Envelope: the host's (1.0.0),
// whichever dialect the envelope's action is in.
type hostActionOrigin = wire.ActionOrigin

func hostOrigin(clientID string, seq int64) *wire.ActionOrigin {
	return &wire.ActionOrigin{ClientID: clientID, ClientSeq: seq}
}

// enumValues lists the values of the constants of type typeName declared
// in a generated Go file, read from its source so that a new value is
// covered without touching the tests.
func enumValues(t testing.TB, path, typeName string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	require.NoError(t, err)
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typeName {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				require.NoError(t, err)
				out = append(out, s)
			}
		}
	}
	return out
}

// known030 reports whether AHP 0.3.0 has an action type, by the
// ActionType constants of ahp/v030/wire.
func known030(t testing.TB) func(string) bool {
	types := enumValues(t, filepath.Join("..", "v030", "wire", "enums.gen.go"), "ActionType")
	require.Greater(t, len(types), 40, "ActionType constants of ahp/v030/wire")
	return func(typ string) bool { return slices.Contains(types, typ) }
}

// The golden cases of testdata/chatfamily and testdata/v1x run again with
// their sessions and chats named as VS Code names them (wire.DefaultChatURI,
// wire.ChatURI): nothing a codec does may depend on the form of a name.
const (
	vscodeS1      = "claude:/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	goldenCopilot = "copilot:/0e4c7d52-5b1a-4cbb-9f5e-0d6a1c1f4a10"
)

// vscodeGoldenNames renames a golden file's text (longer names first,
// where one is a prefix of another).
var vscodeGoldenNames = strings.NewReplacer(
	"ahp-chat:/s1/main", wire.DefaultChatURI(vscodeS1),
	"ahp-chat:/s1/side", wire.ChatURI(vscodeS1, "side"),
	"ahp-chat:/s1/fork", wire.ChatURI(vscodeS1, "fork"),
	"ahp-chat:/s1/f", wire.ChatURI(vscodeS1, "f"),
	"ahp-chat:/0e4c7d52/main", wire.DefaultChatURI(goldenCopilot),
	"ahp-session:/s1", vscodeS1,
)

// vscodeDirectory is testDirectory after vscodeGoldenNames.
func vscodeDirectory() Directory {
	return fakeDirectory{
		vscodeS1:      wire.DefaultChatURI(vscodeS1),
		goldenCopilot: wire.DefaultChatURI(goldenCopilot),
	}
}
