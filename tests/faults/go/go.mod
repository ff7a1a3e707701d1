module example.invalid/throttlekit/faultdriver

go 1.19

require example.invalid/throttlekit/go v0.0.0

replace example.invalid/throttlekit/go => ../../../bindings-c/go
