// Command train_fashion_mnist trains a small CNN on Fashion-MNIST with libaccel from Go.
//
// The same program runs on one process or many:
//
//	./train_fashion_mnist                                   # one process
//	accel launch --nproc_per_node 2 ./train_fashion_mnist   # two, over Gloo
//
// Usage: train_fashion_mnist [--epochs N] [--data DIR] [--max-steps N] [--seed S]
//
//	[--sharding-strategy S] [--checkpointing-steps N|epoch] [--output-dir DIR]
//	[--resume-from-checkpoint DIR]
//
// It prints the main process's loss every 100 steps and one line per epoch, the
// same numbers as examples/c/train_fashion_mnist.c for the same seed.
//
// Checkpoints as in Accelerate's examples: --checkpointing-steps N saves the
// whole training state (model, optimizer, data-loader position, generators) into
// OUTPUT_DIR/step_N every N steps, "epoch" into OUTPUT_DIR/epoch_E after each
// epoch (E from 0); --resume-from-checkpoint DIR continues from one, on any
// number of processes and under any --sharding-strategy (NO_SHARD,
// SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD, HYBRID_SHARD): the loader
// continues where the saved run stood, and the step count from the directory's name.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/libaccel/libaccel/bindings/go/accel"
)

// Conv(1->16) -> pool -> Conv(16->32) -> pool -> 128 -> 10, PyTorch layer names.
const modelSpec = `[{"type": "Conv2d", "in_channels": 1, "out_channels": 16, "kernel_size": 3, "padding": 1},
 {"type": "ReLU"},
 {"type": "MaxPool2d", "kernel_size": 2},
 {"type": "Conv2d", "in_channels": 16, "out_channels": 32, "kernel_size": 3, "padding": 1},
 {"type": "ReLU"},
 {"type": "MaxPool2d", "kernel_size": 2},
 {"type": "Flatten"},
 {"type": "Linear", "in_features": 1568, "out_features": 128},
 {"type": "ReLU"},
 {"type": "Linear", "in_features": 128, "out_features": 10}]`

// Fashion-MNIST training-set statistics.
const mean, std = 0.2860, 0.3530

func loadSplit(dir, split string) (*accel.Dataset, error) {
	return accel.DatasetFromIDX(fmt.Sprintf("%s/%s-images-idx3-ubyte.gz", dir, split),
		fmt.Sprintf("%s/%s-labels-idx1-ubyte.gz", dir, split), mean, std)
}

func newLoader(dir, split string, options accel.DataLoaderOptions) (*accel.DataLoader, error) {
	dataset, err := loadSplit(dir, split)
	if err != nil {
		return nil, err
	}
	return accel.NewDataLoader(dataset, options)
}

// checkpoints: where and when the training state is saved.
type checkpoints struct {
	every     int  // steps between saves (0: none)
	eachEpoch bool // save after every epoch
	outputDir string
}

// trainOneEpoch returns this process's mean loss; step counts steps over all
// epochs, steps the steps of this epoch already taken (a resumed one).
func trainOneEpoch(acc *accel.Accelerator, model *accel.Model, opt *accel.Optimizer, loader *accel.DataLoader,
	maxSteps, steps int, step *int, save checkpoints) (float64, error) {
	if err := model.Train(true); err != nil {
		return 0, err
	}
	sum, trained := 0.0, 0
	for {
		batch, err := loader.Next() // nil at the end of the epoch
		if err != nil {
			return 0, err
		}
		if batch == nil {
			break
		}
		if maxSteps > 0 && steps >= maxSteps { // drain the epoch without training, as the C example does
			accel.CloseAll(batch...)
			continue
		}
		value, err := trainStep(acc, model, opt, batch[0], batch[1])
		accel.CloseAll(batch...)
		if err != nil {
			return 0, err
		}
		sum += value
		steps++
		trained++
		*step++
		if *step%100 == 0 {
			if err := acc.Printf("step %d: loss %.6f", *step, value); err != nil {
				return 0, err
			}
		}
		if save.every > 0 && *step%save.every == 0 {
			if _, err := acc.SaveState(filepath.Join(save.outputDir, fmt.Sprintf("step_%d", *step))); err != nil {
				return 0, err
			}
		}
	}
	if trained == 0 {
		return 0, nil
	}
	return sum / float64(trained), nil
}

func trainStep(acc *accel.Accelerator, model *accel.Model, opt *accel.Optimizer, inputs, labels *accel.Tensor) (float64, error) {
	if err := opt.ZeroGrad(); err != nil {
		return 0, err
	}
	logits, err := model.Forward(inputs)
	if err != nil {
		return 0, err
	}
	defer logits.Close()
	loss, err := logits.Loss(accel.CrossEntropy, labels)
	if err != nil {
		return 0, err
	}
	defer loss.Close()
	if err := acc.Backward(loss); err != nil {
		return 0, err
	}
	if err := opt.Step(); err != nil {
		return 0, err
	}
	return loss.Item()
}

// evaluate is the accuracy over the whole test set: predictions are gathered
// from every process (without the last round's repeated samples) and counted once.
func evaluate(acc *accel.Accelerator, model *accel.Model, loader *accel.DataLoader) (float64, error) {
	if err := model.Eval(); err != nil {
		return 0, err
	}
	correct, total := 0.0, 0.0
	for {
		batch, err := loader.Next()
		if err != nil {
			return 0, err
		}
		if batch == nil {
			break
		}
		hits, n, err := countHits(acc, model, batch[0], batch[1])
		accel.CloseAll(batch...)
		if err != nil {
			return 0, err
		}
		correct += hits
		total += float64(n)
	}
	if total == 0 {
		return 0, nil
	}
	return correct / total, nil
}

func countHits(acc *accel.Accelerator, model *accel.Model, inputs, labels *accel.Tensor) (float64, int64, error) {
	var owned []*accel.Tensor
	defer func() { accel.CloseAll(owned...) }()
	keep := func(t *accel.Tensor, err error) (*accel.Tensor, error) {
		owned = append(owned, t)
		return t, err
	}
	logits, err := keep(model.Forward(inputs))
	if err != nil {
		return 0, 0, err
	}
	predictions, err := keep(logits.Argmax(1))
	if err != nil {
		return 0, 0, err
	}
	allPredictions, err := keep(acc.GatherForMetrics(predictions))
	if err != nil {
		return 0, 0, err
	}
	allLabels, err := keep(acc.GatherForMetrics(labels))
	if err != nil {
		return 0, 0, err
	}
	hits, err := keep(allPredictions.Eq(allLabels))
	if err != nil {
		return 0, 0, err
	}
	count, err := keep(hits.Sum())
	if err != nil {
		return 0, 0, err
	}
	value, err := count.Item()
	if err != nil {
		return 0, 0, err
	}
	n, err := allLabels.Numel()
	return value, n, err
}

func run(epochs, maxSteps int, seed uint64, dataDir, sharding, resumeFrom string, save checkpoints) error {
	acc, err := accel.NewAccelerator(accel.AcceleratorOptions{ShardingStrategy: sharding})
	if err != nil {
		return err
	}
	defer acc.Close()
	if err := acc.SetSeed(seed); err != nil {
		return err
	}
	trainLoader, err := newLoader(dataDir, "train", accel.DataLoaderOptions{BatchSize: 64, Shuffle: true, Seed: seed})
	if err != nil {
		return err
	}
	defer trainLoader.Close()
	testLoader, err := newLoader(dataDir, "t10k", accel.DataLoaderOptions{BatchSize: 256, Seed: seed})
	if err != nil {
		return err
	}
	defer testLoader.Close()
	model, err := accel.ModelFromJSON(modelSpec)
	if err != nil {
		return err
	}
	defer model.Close()
	opt, err := accel.NewOptimizer(model, accel.OptimizerOptions{Kind: accel.AdamW, LR: 2e-3})
	if err != nil {
		return err
	}
	defer opt.Close()
	if err := acc.Prepare(model, opt, trainLoader, testLoader); err != nil {
		return err
	}

	step, firstEpoch, resumedSteps := 0, 1, 0
	if resumeFrom != "" {
		if err := acc.LoadState(resumeFrom); err != nil {
			return err
		}
		// Accelerate's rule: step_N is N steps in (mid-epoch: the loader's position
		// came back with the state), epoch_E is after epoch E.
		name := filepath.Base(resumeFrom)
		if n, err := strconv.Atoi(strings.TrimPrefix(name, "step_")); strings.HasPrefix(name, "step_") && err == nil {
			batches, err := trainLoader.Len()
			if err != nil {
				return err
			}
			step, firstEpoch, resumedSteps = n, 1+n/int(batches), n%int(batches)
		} else if e, err := strconv.Atoi(strings.TrimPrefix(name, "epoch_")); strings.HasPrefix(name, "epoch_") && err == nil {
			firstEpoch = e + 2
		}
	}
	for epoch := firstEpoch; epoch <= epochs; epoch++ {
		taken := 0
		if epoch == firstEpoch {
			taken = resumedSteps
		}
		loss, err := trainOneEpoch(acc, model, opt, trainLoader, maxSteps, taken, &step, save)
		if err != nil {
			return err
		}
		accuracy, err := evaluate(acc, model, testLoader)
		if err != nil {
			return err
		}
		// Average the per-process mean losses so every process count prints the same kind of number.
		local, err := accel.NewTensor([]float64{loss})
		if err != nil {
			return err
		}
		mean, err := acc.Reduce(local, accel.ReduceMean)
		local.Close()
		if err != nil {
			return err
		}
		loss, err = mean.Item()
		mean.Close()
		if err != nil {
			return err
		}
		if err := acc.Printf("epoch %d: loss %.4f, test accuracy %.2f%%", epoch, loss, accuracy*100); err != nil {
			return err
		}
		if save.eachEpoch {
			if _, err := acc.SaveState(filepath.Join(save.outputDir, fmt.Sprintf("epoch_%d", epoch-1))); err != nil {
				return err
			}
		}
	}
	return nil
}

func main() {
	epochs := flag.Int("epochs", 2, "training epochs")
	maxSteps := flag.Int("max-steps", 0, "training steps per epoch (0: all)")
	seed := flag.Uint64("seed", 42, "random seed")
	dataDir := flag.String("data", "/usr/share/datasets/fashion-mnist", "directory of the Fashion-MNIST IDX files")
	sharding := flag.String("sharding-strategy", "", "NO_SHARD, SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD or HYBRID_SHARD (empty: the launcher's)")
	checkpointing := flag.String("checkpointing-steps", "", "save the training state every N steps, or after each \"epoch\"")
	outputDir := flag.String("output-dir", ".", "where --checkpointing-steps saves")
	resumeFrom := flag.String("resume-from-checkpoint", "", "a directory --checkpointing-steps saved, to continue from")
	flag.Parse()
	save := checkpoints{eachEpoch: *checkpointing == "epoch", outputDir: *outputDir}
	if *checkpointing != "" && !save.eachEpoch {
		n, err := strconv.Atoi(*checkpointing)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "--checkpointing-steps %q is neither a positive number of steps nor \"epoch\"\n", *checkpointing)
			os.Exit(2)
		}
		save.every = n
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	if _, err := os.Stat(*dataDir + "/train-images-idx3-ubyte.gz"); err != nil {
		fmt.Fprintf(os.Stderr, "Fashion-MNIST is not in %s: install it with `sudo apt install dataset-fashion-mnist` "+
			"(Debian, Ubuntu) or pass --data DIR\n", *dataDir)
		os.Exit(1)
	}
	if err := run(*epochs, *maxSteps, *seed, *dataDir, *sharding, *resumeFrom, save); err != nil {
		fmt.Fprintln(os.Stderr, "train_fashion_mnist:", err)
		os.Exit(1)
	}
}
