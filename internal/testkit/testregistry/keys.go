package testregistry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// keys holds the registry's signing key and a stranger's key for
// FaultBadSignature. Ed25519 keys are generated in milliseconds, even
// under the race detector.
type keys struct {
	entity, stranger *openpgp.Entity
	armored          string
	keyID            string
}

func newKeys() (*keys, error) {
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e, err := openpgp.NewEntity("tfisolate test registry", "", "registry@tfisolate.test", cfg)
	if err != nil {
		return nil, err
	}
	st, err := openpgp.NewEntity("stranger", "", "stranger@tfisolate.test", cfg)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.Serialize(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return &keys{entity: e, stranger: st, armored: buf.String(), keyID: fmt.Sprintf("%016X", e.PrimaryKey.KeyId)}, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
