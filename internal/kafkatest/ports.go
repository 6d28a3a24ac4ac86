package kafkatest

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// Listener ports come from below Linux's ephemeral range (32768-60999 by
// default), so no outgoing connection of any process on the machine can hold
// one by chance between our check and the JVM's bind. A port handed out once
// is never handed out again by this process, because a node that has not
// bound its port yet still owns it.
const (
	portLow  = 20000
	portHigh = 32000
)

var (
	portsMu  sync.Mutex
	portsOut = map[int]bool{}
)

func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	start := portLow + rand.IntN(portHigh-portLow)
	for i := range portHigh - portLow {
		p := portLow + (start-portLow+i)%(portHigh-portLow)
		if portsOut[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		portsOut[p] = true
		return p, nil
	}
	return 0, errors.New("no free TCP port on 127.0.0.1 between " + strconv.Itoa(portLow) + " and " + strconv.Itoa(portHigh))
}
