package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// configSource remembers where the settings of a Config came from.
type configSource struct {
	file  string           // the --config file, "" without one
	data  []byte           // its contents
	pos   map[string]int64 // key path (agents[0].cwd) → offset of its value
	flags map[string]bool  // top-level keys a flag set
}

func (s *configSource) fromFlag(key string) {
	if s.flags == nil {
		s.flags = map[string]bool{}
	}
	s.flags[key] = true
}

// name names a setting in a message: the file's key, with the position of
// its value (or of the object that lacks it), when the file set it;
// flagName otherwise.
func (s *configSource) name(key, flagName string) string {
	if s != nil && s.file != "" && !s.flags[key] {
		for at := key; at != ""; {
			if off, ok := s.pos[at]; ok {
				line, col := position(s.data, off)
				return fmt.Sprintf("config file %s:%d:%d: %s", s.file, line, col, key)
			}
			i := strings.LastIndexAny(at, ".[")
			if i < 0 {
				break
			}
			at = at[:i]
		}
	}
	if flagName != "" {
		return flagName
	}
	return key
}

// loadConfigFile reads a JSON config file. A key it does not know, a value
// of the wrong kind and broken JSON are reported with the key's path and
// its line and column, so that a typo is found rather than ignored.
func loadConfigFile(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, usagef("--config: %v", err)
	}
	src := &configSource{file: path, data: data, pos: map[string]int64{}}
	if err := checkConfigJSON(data, reflect.TypeFor[Config](), src.pos); err != nil {
		var pe *posError
		if errors.As(err, &pe) {
			line, col := position(data, pe.off)
			return Config{}, usagef("config file %s:%d:%d: %s", path, line, col, pe.msg)
		}
		return Config{}, usagef("config file %s: %v", path, err)
	}
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return Config{}, usagef("config file %s: %v", path, err)
	}
	cfg.src = src
	return cfg, nil
}

// posError is a problem at a byte offset of the file.
type posError struct {
	off int64
	msg string
}

func (e *posError) Error() string { return e.msg }

// position turns a byte offset into a 1-based line and column (in
// characters).
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + utf8.RuneCount(before[start:])
}

// checkConfigJSON walks the JSON document data as a value of type t and
// reports the first key t has no field for, the first value of the wrong
// kind, or broken JSON. It records where each key's value starts in pos.
func checkConfigJSON(data []byte, t reflect.Type, pos map[string]int64) error {
	w := &jsonWalker{dec: json.NewDecoder(bytes.NewReader(data)), data: data, pos: pos}
	w.dec.UseNumber()
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("the file is empty; want a JSON object")
	}
	if err := w.value("", t); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return &posError{off: w.next(), msg: "unexpected text after the settings object"}
	}
	return nil
}

type jsonWalker struct {
	dec  *json.Decoder
	data []byte
	pos  map[string]int64
}

// next is the offset where the next token starts.
func (w *jsonWalker) next() int64 {
	off := w.dec.InputOffset()
	for off < int64(len(w.data)) && strings.IndexByte(" \t\r\n:,", w.data[off]) >= 0 {
		off++
	}
	return off
}

func (w *jsonWalker) token() (json.Token, int64, error) {
	off := w.next()
	tok, err := w.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// The token reader's offsets are not always at the offending
			// character; a plain decode says where it is.
			var v any
			if errors.As(json.Unmarshal(w.data, &v), &se) {
				return nil, off, &posError{off: max(se.Offset-1, 0), msg: "broken JSON: " + se.Error()}
			}
			return nil, off, &posError{off: off, msg: "broken JSON: " + err.Error()}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, off, &posError{off: off, msg: "broken JSON: the file ends in the middle of a value"}
		}
		return nil, off, &posError{off: off, msg: "broken JSON: " + err.Error()}
	}
	return tok, off, nil
}

// value checks one value of type t at path.
func (w *jsonWalker) value(path string, t reflect.Type) error {
	tok, off, err := w.token()
	if err != nil {
		return err
	}
	if path != "" {
		w.pos[path] = off
	}
	if tok == nil {
		return nil // null leaves the default
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wrong := func(want string) error {
		return &posError{off: off, msg: fmt.Sprintf("%s: want %s, not %s", displayKey(path), want, describeToken(tok))}
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return wrong("an object")
		}
		for w.dec.More() {
			ktok, koff, err := w.token()
			if err != nil {
				return err
			}
			key, _ := ktok.(string)
			f, ok := fieldByJSONName(t, key)
			if !ok {
				return &posError{off: koff, msg: fmt.Sprintf("unknown key %s", displayKey(joinKey(path, key)))}
			}
			if err := w.value(joinKey(path, key), f.Type); err != nil {
				return err
			}
		}
		_, _, err := w.token() // '}'
		return err
	case reflect.Map:
		if tok != json.Delim('{') {
			return wrong("an object")
		}
		for w.dec.More() {
			ktok, _, err := w.token()
			if err != nil {
				return err
			}
			key, _ := ktok.(string)
			if err := w.value(joinKey(path, key), t.Elem()); err != nil {
				return err
			}
		}
		_, _, err := w.token()
		return err
	case reflect.Slice:
		if tok != json.Delim('[') {
			return wrong("a list")
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(fmt.Sprintf("%s[%d]", path, i), t.Elem()); err != nil {
				return err
			}
		}
		_, _, err := w.token()
		return err
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return wrong("a string")
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return wrong("true or false")
		}
	case reflect.Int, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return wrong("a whole number")
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return wrong("a whole number")
		}
	default:
		return fmt.Errorf("internal error: config field %s has unsupported type %s", path, t)
	}
	return nil
}

// fieldByJSONName finds the exported field of struct t whose JSON key is
// name.
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" {
			key = f.Name
		}
		if key == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// displayKey shows a key path; the document itself has none.
func displayKey(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(tok)
}
