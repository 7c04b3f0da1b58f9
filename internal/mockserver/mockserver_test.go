package mockserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLog(t *testing.T) {
	var l Log[string]
	assert.Equal(t, 1, l.Add("first"))
	assert.Equal(t, 2, l.Add("second"))
	l.Update(2, func(s *string) { *s += " (answered)" })
	l.Update(3, func(s *string) { t.Error("no call 3 to update") })
	got := l.Requests()
	assert.Equal(t, []string{"first", "second (answered)"}, got)
	got[0] = "changed"
	assert.Equal(t, "first", l.Requests()[0], "Requests returns a copy")

	w := httptest.NewRecorder()
	l.Empty(w, httptest.NewRequest(http.MethodPost, "/v1/telemetry", strings.NewReader(`{"x":1}`)))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "{}", w.Body.String())
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.Equal(t, []string{"POST /v1/telemetry"}, l.Other())
}
