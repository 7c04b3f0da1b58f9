package vscodeclient_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// Our tests of VS Code's client filesystem scenarios
// (suites/clientFilesystemSuite.ts): the resource* commands against the
// host's filesystem. The bridge confines them to sessions' working
// directories and browse roots (issue 23 §3), so each scenario works in
// the workspace of a session it creates first.

func TestVSCodeClientFilesystem(t *testing.T) {
	rig := startProtoRig(t)

	t.Run("resourceCopy, resourceMove, and resourceDelete mutate the tree", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		_, _, root := protoSession(t, c)
		require.NoError(t, os.WriteFile(filepath.Join(root, "origin.txt"), []byte("MUTATE"), 0o644))
		at := func(name string) string { return fileURL(filepath.Join(root, name)) }
		call := func(method string, params map[string]any) json.RawMessage {
			t.Helper()
			params["channel"] = vsc.RootChannel
			raw, err := c.Call(wait(t), method, params)
			require.NoError(t, err, method)
			return raw
		}
		call("resourceCopy", map[string]any{"source": at("origin.txt"), "destination": at("copy.txt")})
		call("resourceMove", map[string]any{"source": at("copy.txt"), "destination": at("moved.txt")})
		call("resourceDelete", map[string]any{"uri": at("origin.txt")})
		var listed struct {
			Entries []struct {
				Name string `json:"name"`
			} `json:"entries"`
		}
		require.NoError(t, json.Unmarshal(call("resourceList", map[string]any{"uri": fileURL(root)}), &listed))
		var names []string
		for _, e := range listed.Entries {
			names = append(names, e.Name)
		}
		sort.Strings(names)
		var read struct {
			Data string `json:"data"`
		}
		require.NoError(t, json.Unmarshal(call("resourceRead", map[string]any{"uri": at("moved.txt"), "encoding": "utf-8"}), &read))
		assert.Equal(t, []string{"moved.txt"}, names, "what remains")
		assert.Equal(t, "MUTATE", read.Data, "the moved file's contents")
	})

	t.Run("createResourceWatch returns a subscribable watch channel", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		_, _, root := protoSession(t, c)
		raw, err := c.Call(wait(t), "createResourceWatch", map[string]any{"channel": vsc.RootChannel, "uri": fileURL(root), "recursive": true})
		require.NoError(t, err)
		var watch struct {
			Channel string `json:"channel"`
		}
		require.NoError(t, json.Unmarshal(raw, &watch), "%s", raw)
		u, err := url.Parse(watch.Channel)
		require.NoError(t, err, "the watch channel is a URI: %q", watch.Channel)
		assert.Equal(t, "ahp-resource-watch", u.Scheme)
		raw, err = c.Call(wait(t), "subscribe", map[string]any{"channel": watch.Channel})
		require.NoError(t, err, "the watch channel can be subscribed")
		var sub struct {
			Snapshot *struct {
				Resource string `json:"resource"`
			} `json:"snapshot"`
		}
		require.NoError(t, json.Unmarshal(raw, &sub), "%s", raw)
		if assert.NotNil(t, sub.Snapshot, "subscribe answers with the watch's snapshot: %s", raw) {
			assert.Equal(t, watch.Channel, sub.Snapshot.Resource)
		}
	})
}
