package accel_test

import (
	"fmt"

	"github.com/libaccel/libaccel/bindings/go/accel"
)

// pairs is a Go dataset: x = [i, 2i] (float32), y = i % 2 (int64).
type pairs struct{ n int64 }

func (p pairs) Len() int64 { return p.n }

func (p pairs) Get(i int64, s *accel.Sample) error {
	if err := s.SetFloat32(0, float32(i), float32(2*i)); err != nil {
		return err
	}
	return s.SetInt64(1, i%2)
}

func ExampleNewMapDataset() {
	ds, err := accel.NewMapDataset(pairs{n: 5},
		accel.Field{DType: accel.Float32, Shape: []int64{2}}, accel.Field{DType: accel.Int64})
	if err != nil {
		fmt.Println(err)
		return
	}
	loader, err := accel.NewDataLoader(ds, accel.DataLoaderOptions{BatchSize: 2, NumWorkers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer loader.Close()
	for {
		batch, err := loader.Next()
		if err != nil || batch == nil {
			break
		}
		x, _ := batch[0].Float32s()
		y, _ := batch[1].Int64s()
		fmt.Println(x, y)
		accel.CloseAll(batch...)
	}
	// Output:
	// [0 0 1 2] [0 1]
	// [2 4 3 6] [0 1]
	// [4 8] [0]
}

func ExampleAccelerator_Accumulate() {
	acc, err := accel.NewAccelerator(accel.AcceleratorOptions{CPU: true, GradientAccumulationSteps: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer acc.Close()
	model, _ := accel.ModelFromJSON(`[{"type": "Linear", "in_features": 2, "out_features": 2}]`)
	opt, _ := accel.NewOptimizer(model, accel.OptimizerOptions{Kind: accel.SGD, LR: 0.1})
	if err := acc.Prepare(model, opt); err != nil {
		fmt.Println(err)
		return
	}
	x, _ := accel.NewTensor([]float32{1, 2, 3, 4}, 2, 2)
	y, _ := accel.NewTensor([]int64{0, 1})
	for step := 1; step <= 4; step++ {
		err := acc.Accumulate(model, func() error {
			logits, err := model.Forward(x)
			if err != nil {
				return err
			}
			loss, err := logits.Loss(accel.CrossEntropy, y)
			if err != nil {
				return err
			}
			if err := acc.Backward(loss); err != nil {
				return err
			}
			sync, _ := acc.SyncGradients()
			fmt.Printf("micro-step %d: optimizer steps: %v\n", step, sync)
			if err := opt.Step(); err != nil {
				return err
			}
			return opt.ZeroGrad()
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// micro-step 1: optimizer steps: false
	// micro-step 2: optimizer steps: true
	// micro-step 3: optimizer steps: false
	// micro-step 4: optimizer steps: true
}
