// Command train_gpt2_fortunes fine-tunes a Hugging Face GPT-2 (exported as
// TorchScript) on Debian's fortunes with libaccel from Go.
//
//	accel launch --nproc_per_node 2 ./train_gpt2_fortunes MODEL_DIR/model.pt
//
// MODEL_DIR holds model.pt, a GPT2LMHeadModel traced through forward(input_ids,
// attention_mask, labels) -> {"loss", "logits"} with a byte-level vocabulary of
// 256 (tests/hf/export_hf_models.py gpt2 MODEL_DIR makes one), and its
// config.json. Usage: train_gpt2_fortunes [--data DIR] [--files a,b] [--epochs N]
// [--max-steps N] [--seed S] [--check] MODEL. It prints the lines
// examples/c/train_gpt_fortunes.c prints: "initial perplexity P", "step S: loss L"
// every 10 steps, "epoch E: loss L, perplexity P" (exact held-out perplexity over
// every process) and a greedy sample.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/libaccel/libaccel/bindings/go/accel"
)

const batchSize = 8

// loadFortunes reads the fortune files (fortunes between lines holding only
// "%") as byte sequences of at most maxLength, cutting longer ones into pieces
// so that no byte is dropped; every tenth fortune is held out.
func loadFortunes(dir, files string, maxLength int) (train, eval [][]int64, err error) {
	n := 0
	for _, name := range strings.Split(files, ",") {
		text, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		for _, fortune := range bytes.Split(append([]byte("\n"), text...), []byte("\n%\n")) {
			fortune = bytes.TrimPrefix(fortune, []byte("\n"))
			for start := 0; start < len(fortune); start += maxLength {
				piece := fortune[start:min(start+maxLength, len(fortune))]
				if len(piece) < 2 { // one byte predicts nothing
					continue
				}
				ids := make([]int64, len(piece))
				for i, b := range piece {
					ids[i] = int64(b)
				}
				if n%10 == 9 {
					eval = append(eval, ids)
				} else {
					train = append(train, ids)
				}
			}
			n++
		}
	}
	return train, eval, nil
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func newLoader(ids [][]int64, options accel.DataLoaderOptions) (*accel.DataLoader, error) {
	seqs, err := accel.SequencesFromLists(ids, 256)
	if err != nil {
		return nil, err
	}
	defer seqs.Close() // the dataset keeps them alive
	dataset, err := accel.DatasetFromSequences(seqs, accel.PaddingOptions{})
	if err != nil {
		return nil, err
	}
	defer dataset.Close()
	return accel.NewDataLoader(dataset, options)
}

func closeMap(m map[string]*accel.Tensor) {
	for _, t := range m {
		t.Close()
	}
}

// sequenceLosses is each sequence's summed next-token loss and its number of
// predicted tokens, [B, 2] float64: position t predicts label t + 1, -100 is ignored.
func sequenceLosses(batch, out map[string]*accel.Tensor) (*accel.Tensor, error) {
	shape, err := out["logits"].Shape()
	if err != nil {
		return nil, err
	}
	logits, err := out["logits"].Float32s()
	if err != nil {
		return nil, err
	}
	labels, err := batch["labels"].Int64s()
	if err != nil {
		return nil, err
	}
	rows, length, vocab := int(shape[0]), int(shape[1]), int(shape[2])
	sums := make([]float64, 2*rows)
	for b := 0; b < rows; b++ {
		for t := 0; t+1 < length; t++ {
			label := labels[b*length+t+1]
			if label == -100 {
				continue
			}
			row := logits[(b*length+t)*vocab : (b*length+t+1)*vocab]
			max := float64(row[0])
			for _, v := range row {
				max = math.Max(max, float64(v))
			}
			total := 0.0
			for _, v := range row {
				total += math.Exp(float64(v) - max)
			}
			sums[2*b] += max + math.Log(total) - float64(row[label])
			sums[2*b+1]++
		}
	}
	return accel.NewTensor(sums, int64(rows), 2)
}

// perplexity is exp(summed token losses / tokens) over every process;
// GatherForMetrics drops the sequences repeated to fill the last round.
func perplexity(acc *accel.Accelerator, model *accel.Model, loader *accel.DataLoader) (float64, error) {
	if err := model.Eval(); err != nil {
		return 0, err
	}
	defer model.Train(true)
	loss, tokens := 0.0, 0.0
	for {
		batch, err := loader.NextNamed()
		if err != nil || batch == nil {
			if err != nil {
				return 0, err
			}
			break
		}
		err = func() error {
			defer closeMap(batch)
			out, err := model.ForwardNamed(batch)
			if err != nil {
				return err
			}
			defer closeMap(out)
			local, err := sequenceLosses(batch, out)
			if err != nil {
				return err
			}
			defer local.Close()
			all, err := acc.GatherForMetrics(local)
			if err != nil {
				return err
			}
			defer all.Close()
			values, err := all.Float64s()
			for i := 0; i+1 < len(values); i += 2 {
				loss, tokens = loss+values[i], tokens+values[i+1]
			}
			return err
		}()
		if err != nil {
			return 0, err
		}
	}
	return math.Exp(loss / tokens), nil
}

// sample decodes greedily on the growing sequence. The trace needs labels, so
// they are the ids themselves and the loss is ignored.
func sample(model *accel.Model, prompt string, newBytes, maxLength int) (string, error) {
	if err := model.Eval(); err != nil {
		return "", err
	}
	defer model.Train(true)
	ids := []int64{}
	for _, b := range []byte(prompt) {
		ids = append(ids, int64(b))
	}
	for len(ids) < min(len(prompt)+newBytes, maxLength) {
		ones := make([]int64, len(ids))
		for i := range ones {
			ones[i] = 1
		}
		x, err := accel.NewTensor(ids, 1, int64(len(ids)))
		if err != nil {
			return "", err
		}
		mask, err := accel.NewTensor(ones, 1, int64(len(ids)))
		if err != nil {
			return "", err
		}
		out, err := model.ForwardNamed(map[string]*accel.Tensor{"input_ids": x, "attention_mask": mask, "labels": x})
		x.Close()
		mask.Close()
		if err != nil {
			return "", err
		}
		next, err := out["logits"].Argmax(-1)
		closeMap(out)
		if err != nil {
			return "", err
		}
		best, err := next.Int64s()
		next.Close()
		if err != nil {
			return "", err
		}
		ids = append(ids, best[len(best)-1])
	}
	text := make([]byte, len(ids))
	for i, b := range ids {
		text[i] = byte(b)
	}
	quoted := strconv.QuoteToASCII(string(text)) // printable, newlines as \n
	return quoted[1 : len(quoted)-1], nil
}

func run(modelPath, dataDir, files string, epochs, maxSteps int, seed uint64, check bool) error {
	for _, name := range strings.Split(files, ",") { // a first run often lacks the data: say where it comes from
		if _, err := os.Stat(filepath.Join(dataDir, name)); err != nil {
			return fmt.Errorf("%v: install the fortunes with `sudo apt install fortunes` "+
				"(Debian, Ubuntu) or pass --data DIR and --files NAMES", err)
		}
	}
	var config struct {
		NPositions int `json:"n_positions"`
	}
	text, err := os.ReadFile(filepath.Join(filepath.Dir(modelPath), "config.json"))
	if err == nil {
		err = json.Unmarshal(text, &config)
	}
	if err != nil {
		return err
	}
	trainIDs, evalIDs, err := loadFortunes(dataDir, files, config.NPositions)
	if err != nil {
		return err
	}
	acc, err := accel.NewAccelerator(accel.AcceleratorOptions{})
	if err != nil {
		return err
	}
	defer acc.Close()
	if err := acc.SetSeed(seed); err != nil {
		return err
	}
	trainLoader, err := newLoader(trainIDs, accel.DataLoaderOptions{BatchSize: batchSize, Shuffle: true, Seed: seed})
	if err != nil {
		return err
	}
	defer trainLoader.Close()
	evalLoader, err := newLoader(evalIDs, accel.DataLoaderOptions{BatchSize: batchSize, Seed: seed})
	if err != nil {
		return err
	}
	defer evalLoader.Close()
	model, err := accel.ModelFromTorchScript(modelPath)
	if err != nil {
		return err
	}
	defer model.Close()
	opt, err := accel.NewOptimizer(model, accel.OptimizerOptions{Kind: accel.AdamW, LR: 3e-3})
	if err != nil {
		return err
	}
	defer opt.Close()
	// Counted in unprepared batches: a prepared scheduler steps once per process per step.
	steps, err := trainLoader.Len()
	if err != nil {
		return err
	}
	world, err := acc.NumProcesses()
	if err != nil {
		return err
	}
	if maxSteps > 0 && int64(maxSteps*world) < steps {
		steps = int64(maxSteps * world)
	}
	total := steps * int64(epochs)
	sched, err := accel.NewScheduler(opt, accel.SchedulerOptions{Kind: accel.LinearWarmup,
		NumWarmupSteps: total / 10, NumTrainingSteps: total})
	if err != nil {
		return err
	}
	defer sched.Close()
	if err := acc.Prepare(model, opt, sched, trainLoader, evalLoader); err != nil {
		return err
	}

	initial, err := perplexity(acc, model, evalLoader)
	if err != nil {
		return err
	}
	if err := acc.Printf("initial perplexity %.3f", initial); err != nil {
		return err
	}
	last, step := initial, 0
	for epoch := 1; epoch <= epochs; epoch++ {
		sum, count := 0.0, 0
		for {
			batch, err := trainLoader.NextNamed()
			if err != nil {
				return err
			}
			if batch == nil {
				break
			}
			if maxSteps > 0 && count >= maxSteps { // drain the epoch without training
				closeMap(batch)
				continue
			}
			value, err := trainStep(acc, model, opt, sched, batch)
			closeMap(batch)
			if err != nil {
				return err
			}
			sum, count, step = sum+value, count+1, step+1
			if step%10 == 0 {
				if err := acc.Printf("step %d: loss %.4f", step, value); err != nil {
					return err
				}
			}
		}
		if last, err = perplexity(acc, model, evalLoader); err != nil {
			return err
		}
		mean := 0.0
		if count > 0 {
			mean = sum / float64(count)
		}
		local, err := accel.NewTensor([]float64{mean})
		if err != nil {
			return err
		}
		reduced, err := acc.Reduce(local, accel.ReduceMean)
		local.Close()
		if err != nil {
			return err
		}
		mean, err = reduced.Item()
		reduced.Close()
		if err != nil {
			return err
		}
		if err := acc.Printf("epoch %d: loss %.4f, perplexity %.3f", epoch, mean, last); err != nil {
			return err
		}
	}
	text2, err := sample(model, "The ", 40, config.NPositions)
	if err != nil {
		return err
	}
	if err := acc.Printf("sample: \"%s\"", text2); err != nil {
		return err
	}
	if check && !(last < initial) {
		return fmt.Errorf("the perplexity did not fall (%.3f -> %.3f)", initial, last)
	}
	return nil
}

func trainStep(acc *accel.Accelerator, model *accel.Model, opt *accel.Optimizer, sched *accel.Scheduler,
	batch map[string]*accel.Tensor) (float64, error) {
	out, err := model.ForwardNamed(batch)
	if err != nil {
		return 0, err
	}
	defer closeMap(out)
	loss, ok := out["loss"]
	if !ok {
		return 0, errors.New("the model returned no loss: is it traced with labels?")
	}
	for _, do := range []func() error{func() error { return acc.Backward(loss) }, opt.Step, sched.Step, opt.ZeroGrad} {
		if err := do(); err != nil {
			return 0, err
		}
	}
	return loss.Item()
}

func main() {
	dataDir := flag.String("data", "/usr/share/games/fortunes", "directory of the fortune files")
	files := flag.String("files", "linux,disclaimer", "comma-separated fortune files")
	epochs := flag.Int("epochs", 3, "training epochs")
	maxSteps := flag.Int("max-steps", 0, "training steps per epoch (0: all)")
	seed := flag.Uint64("seed", 42, "random seed")
	check := flag.Bool("check", false, "fail unless the held-out perplexity fell")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: train_gpt2_fortunes [flags] MODEL_DIR/model.pt")
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *dataDir, *files, *epochs, *maxSteps, *seed, *check); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
