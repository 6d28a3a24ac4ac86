package platform

import (
	"context"
	"fmt"
	"strings"
)

// LogLevel is the severity of one log line.
type LogLevel int

const (
	LogDebug LogLevel = iota
	LogInfo
	LogWarn
	LogError
)

// String names the level the way most loggers do.
func (l LogLevel) String() string {
	switch l {
	case LogDebug:
		return "debug"
	case LogInfo:
		return "info"
	case LogWarn:
		return "warn"
	case LogError:
		return "error"
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// LogFunc receives the package's log lines. It takes the context of the call
// that logs, so that the provider can hand it straight to tflog, whose logger
// lives in the request's context. A nil LogFunc discards everything.
//
// Every message and field reaching a LogFunc has already been scrubbed of the
// bearer token.
type LogFunc func(ctx context.Context, level LogLevel, msg string, fields map[string]any)

const redacted = "[REDACTED]"

// scrubber removes one secret from everything that may be logged or shown.
// It exists because the token can reach text by routes we do not control:
// a server that echoes it in an error body, or an error from a lower layer.
type scrubber struct {
	secret string
}

func (s scrubber) string(v string) string {
	if s.secret == "" {
		return v
	}
	return strings.ReplaceAll(v, s.secret, redacted)
}

// value keeps numbers and booleans as they are, so that structured loggers
// keep their types, and turns everything else into scrubbed text.
func (s scrubber) value(v any) any {
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return x
	case string:
		return s.string(x)
	case error:
		return s.string(x.Error())
	case fmt.Stringer:
		return s.string(x.String())
	default:
		return s.string(fmt.Sprint(x))
	}
}

// sensitiveKey reports field names whose values are never logged, whatever
// they hold.
func sensitiveKey(k string) bool {
	switch strings.ToLower(k) {
	case "authorization", "token", "bearer":
		return true
	}
	return false
}

// logger binds a LogFunc to the context of one call and scrubs every line.
type logger struct {
	ctx   context.Context
	fn    LogFunc
	scrub scrubber
}

func (l logger) log(level LogLevel, msg string, fields map[string]any) {
	if l.fn == nil {
		return
	}
	clean := make(map[string]any, len(fields))
	for k, v := range fields {
		if sensitiveKey(k) {
			clean[k] = redacted
			continue
		}
		clean[k] = l.scrub.value(v)
	}
	l.fn(l.ctx, level, l.scrub.string(msg), clean)
}

// leveled adapts logger to go-retryablehttp's LeveledLogger, whose fields
// come as alternating keys and values.
type leveled struct{ l logger }

func (a leveled) Error(msg string, kv ...any) { a.l.log(LogError, msg, pairs(kv)) }
func (a leveled) Info(msg string, kv ...any)  { a.l.log(LogInfo, msg, pairs(kv)) }
func (a leveled) Debug(msg string, kv ...any) { a.l.log(LogDebug, msg, pairs(kv)) }
func (a leveled) Warn(msg string, kv ...any)  { a.l.log(LogWarn, msg, pairs(kv)) }

func pairs(kv []any) map[string]any {
	m := make(map[string]any, len(kv)/2+1)
	for i := 0; i < len(kv); i += 2 {
		k := fmt.Sprint(kv[i])
		if i+1 == len(kv) {
			m[k] = nil
			break
		}
		m[k] = kv[i+1]
	}
	return m
}
