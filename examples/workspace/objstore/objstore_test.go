package objstore_test

import (
	"errors"
	"testing"

	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/objstore/objstoretest"
)

func TestDir(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		d, err := objstore.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

// TestS3 runs the suite on the S3 server scripts/test.sh starts.
func TestS3(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store { return objstoretest.S3(t) })
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/.uploads/b", "a\\b"} {
		if err := objstore.ValidateKey(k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	if err := objstore.ValidateKey("ws/op/home.tar.zst.meta"); err != nil {
		t.Error(err)
	}
}
