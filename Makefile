# tend's two entry points. See README.md.

.PHONY: demo test

# Runs the gateway demo on the embedded in-memory default.
demo:
	go run ./examples/gateway

# Runs every check and every test of every module, starting the real servers
# the tests need.
test:
	bash scripts/test.sh
