// Tools of the release process: building a module proxy from the working
// tree. A module of its own, so that tend's modules never depend on it.
module github.com/tendhq/tend/scripts/release

go 1.26.0

require golang.org/x/mod v0.41.0
