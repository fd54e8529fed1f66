package consumequeue

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind; the package
// starts none, and this keeps it so.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
