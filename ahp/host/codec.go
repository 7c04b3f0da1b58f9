package host

// codec is the version-specific encoding at the connection edge. The host
// core builds every frame in the baseline (0.3.0) encoding; a connection
// that negotiated another version receives frames through its codec, which
// may rewrite a frame or drop it (return nil) when that version has no such
// message. Broadcast envelopes are translated once per codec, not once per
// connection, so "encode once" holds per protocol version. Adding a version
// (0.4.0: `ahp-chat:` channels, `chat/*` actions) means adding a codec here
// and its version to supportedVersions, without touching the sequencer.
type codec interface {
	// Version is the protocol version the codec speaks.
	Version() string
	// Translate turns a baseline frame into this version's frame, or nil
	// to withhold it from connections speaking this version.
	Translate(frame []byte) []byte
}

// baselineCodec is AHP 0.3.0, the host's native encoding.
type baselineCodec struct{}

func (baselineCodec) Version() string               { return ProtocolVersion030 }
func (baselineCodec) Translate(frame []byte) []byte { return frame }

// baseline is the codec of connections before negotiation and of 0.3.0.
var baseline codec = baselineCodec{}

// codecs maps each version in supportedVersions to its codec.
var codecs = map[string]codec{ProtocolVersion030: baseline}

// codecFor returns the codec of a negotiated version.
func codecFor(version string) codec {
	if c, ok := codecs[version]; ok {
		return c
	}
	return baseline
}

// translateShared translates a broadcast frame for c, reusing the result
// for every connection with the same codec (cache is per broadcast).
// envelope says whether the frame is an action envelope, whose encodings
// are counted in Stats.EnvelopesEncoded.
func (h *Host) translateShared(c *conn, frame []byte, cache map[codec][]byte, envelope bool) ([]byte, bool) {
	cd := c.codec
	if cd == nil || cd == baseline {
		return frame, true
	}
	if f, ok := cache[cd]; ok {
		return f, f != nil
	}
	f := cd.Translate(frame)
	if envelope {
		h.stats.encoded.Add(1)
	}
	cache[cd] = f
	return f, f != nil
}

// forConn translates a frame built for one connection (a response) into
// that connection's encoding; nil means the frame is withheld.
func forConn(c *conn, frame []byte) []byte {
	if cd := c.codec; cd != nil && cd != baseline {
		return cd.Translate(frame)
	}
	return frame
}
