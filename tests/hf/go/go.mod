module github.com/libaccel/libaccel/tests/hf/go

go 1.19

require github.com/libaccel/libaccel/bindings/go v0.0.0

replace github.com/libaccel/libaccel/bindings/go => ../../../bindings/go
