package aws

import (
	"os"
	"testing"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// moto is the package's moto server, nil when none could start (tests then skip, see Require).
var moto *mototest.Server

func TestMain(m *testing.M) { os.Exit(mototest.Main(m, &moto)) }
