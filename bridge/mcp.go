package bridge

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// MCP servers (docs/mapping.md, "MCP servers"). A session's servers come
// from the provider's configuration (the bridge's per-provider `mcpServers`
// key, ProviderInfo.McpServers) and from the plugins the creating client
// brings (createSession.activeClient.customizations: Open Plugins folders
// with a `.mcp.json`, or that file itself). They are shown in
// SessionState.customizations — configured servers as top-level MCP server
// entries, a client's plugin as a plugin with its servers as children —
// and the enabled ones are given to every chat's backend session. Nothing
// of a server's env or headers is ever put in the state: they are secrets.

// metaMcp is the `_meta` key of a customization that says what the bridge
// did with it when that is not what it shows (a toggle that applies from
// the next session).
const metaMcp = "ahp-bridge/mcp"

// maxPluginManifest bounds a plugin's `.mcp.json`.
const maxPluginManifest = 1 << 20

// mcpEntry is one MCP server of a session.
type mcpEntry struct {
	server  backend.McpServer // ID = its customization id
	enabled bool              // given to the agent sessions opened so far
}

// sessionMcp is a session's MCP servers and their customizations.
type sessionMcp struct {
	entries        []mcpEntry
	customizations []wire.Customization
}

// servers are the enabled servers, as backend sessions take them.
func (m *sessionMcp) servers() []backend.McpServer {
	if m == nil {
		return nil
	}
	var out []backend.McpServer
	for _, e := range m.entries {
		if e.enabled {
			out = append(out, e.server)
		}
	}
	return out
}

// has reports whether id is one of the session's MCP servers, and whether
// the running agent sessions were given it.
func (m *sessionMcp) has(id string) (known, given bool) {
	if m == nil {
		return false, false
	}
	for _, e := range m.entries {
		if e.server.ID == id {
			return true, e.enabled
		}
	}
	return false, false
}

// configMcpID is the customization id of a configured server.
func configMcpID(name string) string { return "ahp-bridge/config/" + name }

// buildMcp gathers a new session's MCP servers: the provider's configured
// ones (with the enablement users gave them in earlier sessions), then
// those of the creating client's plugins.
func (b *Bridge) buildMcp(providerID string, info backend.ProviderInfo, active *wire.SessionActiveClient) *sessionMcp {
	m := &sessionMcp{}
	b.mu.Lock()
	remembered := b.mcpEnablement[providerID]
	b.mu.Unlock()
	for _, srv := range info.McpServers {
		srv.ID = configMcpID(srv.Name)
		enablement := remembered[srv.ID]
		on := reducer.EffectiveEnabled(enablement)
		m.entries = append(m.entries, mcpEntry{server: srv, enabled: on})
		m.customizations = append(m.customizations, wire.NewCustomization(&wire.McpServerCustomization{
			ID:         srv.ID,
			URI:        fmt.Sprintf("ahp-bridge:/config/%s/mcpServers/%s", url.PathEscape(providerID), url.PathEscape(srv.Name)),
			Name:       srv.Name,
			Meta:       map[string]any{"transport": string(srv.Transport), "source": "bridge configuration"},
			Enablement: enablement,
			State:      initialMcpState(on),
		}))
	}
	if active == nil {
		return m
	}
	for _, p := range active.Customizations {
		m.addPlugin(p, active.ClientID)
	}
	return m
}

func initialMcpState(enabled bool) wire.McpServerState {
	if enabled {
		return wire.NewMcpServerState(&wire.McpServerStartingState{})
	}
	return wire.NewMcpServerState(&wire.McpServerStoppedState{})
}

// addPlugin reads a client's plugin and adds its MCP servers: those of its
// children when the client listed MCP servers, else all its manifest
// declares.
func (m *sessionMcp) addPlugin(p wire.ClientPluginCustomization, clientID string) {
	plugin := &wire.PluginCustomization{
		ID: p.ID, URI: p.URI, Name: p.Name, Icons: p.Icons, Range: p.Range, Meta: p.Meta,
		ClientID: wire.Ptr(clientID), Enablement: p.Enablement, Version: p.Version,
		Children: []wire.ChildCustomization{},
	}
	// Children the client listed that are not MCP servers (skills, agents,
	// …) are kept as it gave them: the bridge passes only MCP servers on.
	var wanted []*wire.McpServerCustomization
	for _, ch := range p.Children {
		if mc, ok := ch.Value.(*wire.McpServerCustomization); ok {
			wanted = append(wanted, mc)
		} else {
			plugin.Children = append(plugin.Children, ch)
		}
	}
	declared, root, err := readPluginServers(p.URI)
	if err != nil {
		plugin.Load = wire.Ptr(wire.NewCustomizationLoadState(&wire.CustomizationErrorState{Message: err.Error()}))
		m.customizations = append(m.customizations, wire.NewCustomization(plugin))
		return
	}
	pluginOn := reducer.EffectiveEnabled(p.Enablement)
	add := func(id string, srv backend.McpServer, given *wire.McpServerCustomization) {
		srv.ID = id
		on := pluginOn
		child := &wire.McpServerCustomization{ID: id, URI: manifestURI(p.URI, root), Name: srv.Name,
			Meta: map[string]any{"transport": string(srv.Transport)}}
		if given != nil {
			child.Icons, child.Range, child.Enablement = given.Icons, given.Range, given.Enablement
			for k, v := range given.Meta {
				child.Meta[k] = v
			}
			on = on && reducer.EffectiveEnabled(given.Enablement)
		}
		child.State = initialMcpState(on)
		m.entries = append(m.entries, mcpEntry{server: withPluginRoot(srv, root), enabled: on})
		plugin.Children = append(plugin.Children, wire.NewChildCustomization(child))
	}
	var problems []string
	if len(wanted) == 0 {
		for _, srv := range declared {
			add(p.ID+"/"+srv.Name, srv, nil)
		}
	}
	for _, w := range wanted {
		i := slices.IndexFunc(declared, func(s backend.McpServer) bool { return s.Name == w.Name })
		if i < 0 {
			w := *w
			w.State = wire.NewMcpServerState(&wire.McpServerErrorState{Error: wire.ErrorInfo{ErrorType: "notDeclared",
				Message: fmt.Sprintf("the plugin's .mcp.json declares no MCP server %q", w.Name)}})
			plugin.Children = append(plugin.Children, wire.NewChildCustomization(&w))
			problems = append(problems, w.Name)
			continue
		}
		add(orID(w.ID, p.ID+"/"+w.Name), declared[i], w)
	}
	if len(problems) > 0 {
		plugin.Load = wire.Ptr(wire.NewCustomizationLoadState(&wire.CustomizationDegradedState{
			Message: "not declared in the plugin's .mcp.json: " + strings.Join(problems, ", ")}))
	} else {
		plugin.Load = wire.Ptr(wire.NewCustomizationLoadState(&wire.CustomizationLoadedState{}))
	}
	m.customizations = append(m.customizations, wire.NewCustomization(plugin))
}

func orID(id, def string) string {
	if id != "" {
		return id
	}
	return def
}

// readPluginServers reads the MCP servers a plugin declares: the
// `.mcp.json` in its folder, or the file its URI names. root is the
// plugin's folder.
func readPluginServers(uri string) (servers []backend.McpServer, root string, err error) {
	u, perr := url.Parse(uri)
	if perr != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
		return nil, "", fmt.Errorf("the plugin %s is not a file URI of this machine, so its MCP servers cannot be read", uri)
	}
	p := filepath.Clean(u.Path)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, "", fmt.Errorf("the plugin cannot be read: %w", err)
	}
	root, file := p, filepath.Join(p, ".mcp.json")
	if !fi.IsDir() {
		root, file = filepath.Dir(p), p
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, root, fmt.Errorf("the plugin's MCP servers cannot be read: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPluginManifest+1))
	if err != nil {
		return nil, root, fmt.Errorf("reading the plugin's %s: %w", filepath.Base(file), err)
	}
	if len(b) > maxPluginManifest {
		return nil, root, fmt.Errorf("the plugin's %s is larger than %d bytes", filepath.Base(file), maxPluginManifest)
	}
	servers, err = backend.ParseMcpServers(b)
	if err != nil {
		return servers, root, fmt.Errorf("the plugin's %s: %w", filepath.Base(file), err)
	}
	return servers, root, nil
}

// manifestURI is the file a plugin's servers are declared in.
func manifestURI(pluginURI, root string) string {
	if strings.HasSuffix(pluginURI, ".json") {
		return pluginURI
	}
	return (&url.URL{Scheme: "file", Path: filepath.Join(root, ".mcp.json")}).String()
}

// withPluginRoot expands the plugin-root variables Open Plugins and Claude
// Code manifests use in a stdio server's command, arguments and env.
func withPluginRoot(s backend.McpServer, root string) backend.McpServer {
	r := strings.NewReplacer("${PLUGIN_ROOT}", root, "${CLAUDE_PLUGIN_ROOT}", root)
	s.Command = r.Replace(s.Command)
	s.Args = slices.Clone(s.Args)
	for i := range s.Args {
		s.Args[i] = r.Replace(s.Args[i])
	}
	s.Env = slices.Clone(s.Env)
	for i := range s.Env {
		s.Env[i].Value = r.Replace(s.Env[i].Value)
	}
	return s
}

// mcpStateAction is session/mcpServerStateChanged for a backend's report.
func mcpStateAction(st backend.McpServerStatus) *wire.SessionMcpServerStateChangedAction {
	var state wire.McpServerState
	switch st.Status {
	case backend.McpReady:
		state = wire.NewMcpServerState(&wire.McpServerReadyState{})
	case backend.McpError:
		state = wire.NewMcpServerState(&wire.McpServerErrorState{Error: wire.ErrorInfo{ErrorType: "mcpServer", Message: st.Message}})
	default:
		state = wire.NewMcpServerState(&wire.McpServerStartingState{})
	}
	return &wire.SessionMcpServerStateChangedAction{ID: st.ID, State: state}
}

// mcpToggled handles a client's toggle of a customization: ACP cannot add
// or remove a running agent session's MCP servers, so the change applies
// from the next session, and the entry says so in its `_meta`. A toggle of
// a configured server is remembered for the provider's next sessions.
func (s *session) mcpToggled(a *wire.SessionCustomizationToggledAction) {
	m := s.mcp
	if m == nil {
		return
	}
	var list []wire.Customization
	s.b.host.ReadSession(s.uri, func(st *wire.SessionState) {
		b, err := json.Marshal(st.Customizations)
		if err == nil {
			_ = json.Unmarshal(b, &list) // a copy the bridge may change
		}
	})
	changed := false
	note := func(id string, enablement []wire.CustomizationEnablement, meta *map[string]any) {
		known, given := m.has(id)
		if !known {
			return
		}
		on := reducer.EffectiveEnabled(enablement)
		if *meta == nil {
			*meta = map[string]any{}
		}
		switch {
		case given && !on:
			(*meta)[metaMcp] = "disabled from the next session: ACP cannot remove an MCP server from a running agent session, so this session's agent keeps it until the session ends"
		case !given && on:
			(*meta)[metaMcp] = "enabled from the next session: ACP cannot add an MCP server to a running agent session"
		default:
			delete(*meta, metaMcp)
		}
		changed = true
		if strings.HasPrefix(id, "ahp-bridge/config/") {
			s.b.rememberMcp(s.providerID, id, enablement)
		}
	}
	for _, c := range list {
		switch v := c.Value.(type) {
		case *wire.McpServerCustomization:
			if v.ID == a.ID {
				note(v.ID, v.Enablement, &v.Meta)
			}
		case *wire.PluginCustomization:
			for _, ch := range v.Children {
				mc, ok := ch.Value.(*wire.McpServerCustomization)
				if !ok {
					continue
				}
				if v.ID == a.ID || mc.ID == a.ID {
					en := mc.Enablement
					if !reducer.EffectiveEnabled(v.Enablement) {
						en = v.Enablement
					}
					note(mc.ID, en, &mc.Meta)
				}
			}
		}
	}
	if changed {
		s.b.dispatch(s.uri, &wire.SessionCustomizationsChangedAction{Customizations: list})
	}
}

// rememberMcp keeps a configured server's enablement for the provider's
// next sessions.
func (b *Bridge) rememberMcp(provider, id string, enablement []wire.CustomizationEnablement) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mcpEnablement[provider] == nil {
		b.mcpEnablement[provider] = map[string][]wire.CustomizationEnablement{}
	}
	b.mcpEnablement[provider][id] = enablement
}

// publishMcp shows the session's MCP servers in its customizations.
func (s *session) publishMcp() {
	if s.mcp == nil || len(s.mcp.customizations) == 0 {
		return
	}
	s.b.dispatch(s.uri, &wire.SessionCustomizationsChangedAction{Customizations: s.mcp.customizations})
}

// roots are the session's working directories as local paths (cwd among
// them): the files a prompt's attachments may name.
func (s *session) roots(cwd string) []string {
	out := []string{}
	if cwd != "" {
		out = append(out, cwd)
	}
	for _, d := range s.dirs {
		p, err := mapping.WorkingDirectory([]string{d}, nil)
		if err == nil && p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// chatState is a copy of a chat's state, for a prompt that attaches a chat
// (its transcript); nil when the host has no such chat.
func (b *Bridge) chatState(uri string) *wire.ChatState {
	var out *wire.ChatState
	b.host.ReadChat(uri, func(st *wire.ChatState) {
		raw, err := json.Marshal(st)
		if err != nil {
			return
		}
		var cp wire.ChatState
		if json.Unmarshal(raw, &cp) == nil {
			out = &cp
		}
	})
	return out
}
