// Package interop holds streamkit's end-to-end interoperability tests: the built streamkit
// binary and pyarrow peers (interop/testdata/arrowgen.py, scripts/examples/source.py) run as
// separate processes joined by real pipes, as a user's shell pipeline would run them. It has
// no non-test code. The wire and checkpoint protocol under test is docs/protocol.md.
//
// The tests need the Python venv with pyarrow (internal/peertest.Python: $STREAMKIT_PYTHON
// or .venv, from scripts/peers.sh); without it they skip, or fail under
// STREAMKIT_REQUIRE_PEERS=1.
//
//	go test ./interop                 # run
//	go test ./interop -run Golden -update   # regenerate testdata/cli/print/*/stdout of the args cases
package interop
