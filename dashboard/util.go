package dashboard

import (
	"slices"
	"strconv"
	"time"
)

// sortedCopy is a sorted copy of names.
func sortedCopy(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// timeLayout is the value of an <input type="datetime-local">; the
// dashboard reads and shows such times in UTC.
const timeLayout = "2006-01-02T15:04"

// parseTime reads a datetime-local value (UTC, seconds optional).
func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(timeLayout+":05", v); err == nil {
		return t, nil
	}
	return time.Parse(timeLayout, v)
}

// formatTime is t as a datetime-local value in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }
