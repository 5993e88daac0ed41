module github.com/libaccel/libaccel/bindings/go

go 1.19
