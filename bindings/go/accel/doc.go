// Package accel is libaccel for Go: Hugging Face Accelerate's training model
// (prepare, backward, accumulate, gather_for_metrics, save_state) over LibTorch,
// for one CPU, one GPU, many processes or many machines (`accel launch`).
//
//	acc, err := accel.NewAccelerator(accel.AcceleratorOptions{GradientAccumulationSteps: 2})
//	model, err := accel.ModelFromJSON(`[{"type": "Linear", "in_features": 784, "out_features": 10}]`)
//	opt, err := accel.NewOptimizer(model, accel.OptimizerOptions{Kind: accel.AdamW, LR: 1e-3})
//	ds, err := accel.NewMapDataset(myData, accel.Field{DType: accel.Float32, Shape: []int64{784}}, accel.Field{DType: accel.Int64})
//	loader, err := accel.NewDataLoader(ds, accel.DataLoaderOptions{BatchSize: 64, Shuffle: true})
//	err = acc.Prepare(model, opt, loader)
//	for batch, err := range loader.Batches() { // or loader.Next() until it returns nil
//		err = acc.Accumulate(model, func() error {
//			logits, err := model.Forward(batch[0])
//			...
//			loss, err := logits.Loss(accel.CrossEntropy, batch[1])
//			...
//			if err := acc.Backward(loss); err != nil {
//				return err
//			}
//			if err := opt.Step(); err != nil {
//				return err
//			}
//			return opt.ZeroGrad()
//		})
//	}
//
// Errors: every failing call returns an error; libaccel's failures are *Error
// with the accel_status (Code, also usable with errors.Is(err, accel.ErrState))
// and the C layer's message. Nothing panics for ordinary failures.
//
// Lifetimes: Close frees an object at once; a finalizer frees a forgotten one.
// A closed object returns an error wrapping ErrClosed. Objects keep the objects
// they were built from alive (an optimizer its model, a loader its dataset).
//
// Callbacks written in Go (MapDataset, IterableDataset, Stateful checkpoint
// objects, state hooks, Tracker) run on libaccel's threads too (loader
// workers); an error they return, or a panic, becomes the error of the
// libaccel call that invoked them.
//
// libaccel is linked with cgo through pkg-config (#cgo pkg-config: accel, in
// internal/core): with libaccel-dev installed nothing is needed; for another
// prefix or a build tree, put the folder holding its accel.pc on
// PKG_CONFIG_PATH, e.g. PKG_CONFIG_PATH=$PWD/build/go/pkgconfig (the build
// tree's accel.pc, which also sets an rpath to build/src). CGO_LDFLAGS is not
// needed.
package accel
