package host

import "sync"

// directory maps sessions to their default chats and back, for codecs
// (codec.Directory). It has its own lock because codecs run inside the
// sequencer, under Host.mu.
type directory struct {
	mu      sync.RWMutex
	chatOf  map[string]string // session → default chat
	session map[string]string // default chat → session
}

func newDirectory() *directory {
	return &directory{chatOf: map[string]string{}, session: map[string]string{}}
}

func (d *directory) add(session, chat string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.chatOf[session] = chat
	d.session[chat] = session
}

func (d *directory) remove(session string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.session, d.chatOf[session])
	delete(d.chatOf, session)
}

// DefaultChat implements codec.Directory.
func (d *directory) DefaultChat(session string) (string, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	c, ok := d.chatOf[session]
	return c, ok
}

// SessionOfDefaultChat implements codec.Directory.
func (d *directory) SessionOfDefaultChat(chat string) (string, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	s, ok := d.session[chat]
	return s, ok
}
