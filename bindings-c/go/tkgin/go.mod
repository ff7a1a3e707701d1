// tkgin is a module of its own so that the parent module (../go.mod) needs no gin: `go test
// ./...` there skips this folder. bindings-c/go/tkgin/go.sh builds and tests it against
// Debian's golang-github-gin-gonic-gin-dev in GOPATH mode (no module proxy is needed); with
// a proxy, `go mod tidy` here resolves the same requirements as modules.
module example.invalid/throttlekit/go/tkgin

go 1.19

require (
	example.invalid/throttlekit/go v0.0.0
	github.com/gin-gonic/gin v1.8.1
)

replace example.invalid/throttlekit/go => ../
