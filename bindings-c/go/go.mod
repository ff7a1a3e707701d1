module example.invalid/throttlekit/go

go 1.19
