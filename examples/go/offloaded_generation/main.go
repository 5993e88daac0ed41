// Command offloaded_generation runs a GPT-style language model that does not
// fit its memory budget: the model is built empty (no memory), Accelerate's
// device map puts what fits the CPU budget in RAM and the rest on disk, and
// greedy generation streams each offloaded block in just before it runs.
//
//	offloaded_generation [--budget 24MB] [--layers 8] [--width 256] [--tokens 8] [--work DIR]
//
// It first writes a randomly initialised checkpoint of the model (a real
// program would load a trained one), generates with the fully loaded model for
// comparison, then generates again offloaded and prints both token lists, the
// device map and the peak RSS. It exits 1 if the tokens differ.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/libaccel/libaccel/bindings/go/accel"
)

// gptSpec is a causal LM as a JSON graph spec: token embedding, `layers`
// transformer blocks (causal), a final layer norm and the vocabulary head.
func gptSpec(layers, width int) string {
	block := fmt.Sprintf(`{"type": "TransformerEncoderLayer", "d_model": %d, "nhead": 4, "dim_feedforward": %d, "batch_first": true}`,
		width, 4*width)
	blocks := make([]string, layers)
	for i := range blocks {
		blocks[i] = block
	}
	return fmt.Sprintf(`{"inputs": ["input_ids"], "nodes": [
  {"name": "wte", "type": "Embedding", "num_embeddings": 256, "embedding_dim": %d},
  {"name": "h", "type": "Sequential", "layers": [%s]},
  {"name": "ln_f", "type": "LayerNorm", "normalized_shape": %d},
  {"name": "lm_head", "type": "Linear", "in_features": %d, "out_features": 256, "bias": false}],
 "outputs": ["lm_head"]}`, width, strings.Join(blocks, ",\n    "), width, width)
}

// generate appends the argmax of the last position `tokens` times (no cache).
func generate(model *accel.Model, prompt []int64, tokens int) ([]int64, error) {
	if err := model.Eval(); err != nil {
		return nil, err
	}
	ids := append([]int64(nil), prompt...)
	for i := 0; i < tokens; i++ {
		input, err := accel.NewTensor(ids, 1, int64(len(ids)))
		if err != nil {
			return nil, err
		}
		logits, err := model.Forward(input)
		input.Close()
		if err != nil {
			return nil, err
		}
		values, err := logits.Float32s()
		logits.Close()
		if err != nil {
			return nil, err
		}
		last := values[len(values)-256:]
		best := 0
		for v := range last {
			if last[v] > last[best] {
				best = v
			}
		}
		ids = append(ids, int64(best))
	}
	return ids[len(prompt):], nil
}

// peakRSS is VmHWM from /proc/self/status ("" where there is none).
func peakRSS() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if strings.HasPrefix(scanner.Text(), "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(scanner.Text(), "VmHWM:"))
		}
	}
	return ""
}

func run() error {
	budget := flag.String("budget", "24MB", "CPU memory for weights; the rest is offloaded to disk")
	layers := flag.Int("layers", 8, "transformer blocks")
	width := flag.Int("width", 256, "model width")
	tokens := flag.Int("tokens", 8, "tokens to generate")
	work := flag.String("work", "", "folder for the checkpoint and the offload files (default: a temporary one)")
	flag.Parse()
	dir := *work
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "offloaded-generation"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	spec := gptSpec(*layers, *width)
	prompt := []int64{'H', 'e', 'l', 'l', 'o'}

	// 1. A checkpoint to load, and the tokens of the fully loaded model.
	acc, err := accel.NewAccelerator(accel.AcceleratorOptions{CPU: true})
	if err != nil {
		return err
	}
	defer acc.Close()
	full, err := accel.ModelFromJSON(spec)
	if err != nil {
		return err
	}
	checkpoint := filepath.Join(dir, "checkpoint")
	if err := acc.SaveModel(full, checkpoint, ""); err != nil {
		return err
	}
	want, err := generate(full, prompt, *tokens)
	if err != nil {
		return err
	}
	full.Close()

	// 2. The same model built empty, placed by Accelerate's rules, offloaded.
	model, err := accel.ModelFromJSONEmpty(spec)
	if err != nil {
		return err
	}
	defer model.Close()
	sizes, err := model.ModuleSizes("")
	if err != nil {
		return err
	}
	deviceMap, err := model.InferAutoDeviceMap(map[string]string{"cpu": *budget},
		[]string{"TransformerEncoderLayer"}, "")
	if err != nil {
		return err
	}
	if err := model.LoadCheckpointAndDispatch(checkpoint, deviceMap, filepath.Join(dir, "offload"), ""); err != nil {
		return err
	}
	got, err := generate(model, prompt, *tokens)
	if err != nil {
		return err
	}

	names := make([]string, 0, len(deviceMap))
	for name := range deviceMap {
		names = append(names, name)
	}
	sort.Strings(names)
	placed := make([]string, len(names))
	for i, name := range names {
		placed[i] = name + "=" + deviceMap[name]
	}
	fmt.Printf("model: %.1f MB of weights, cpu budget %s\n", float64(sizes[""])/1e6, *budget)
	fmt.Printf("device map: %s\n", strings.Join(placed, " "))
	fmt.Printf("fully loaded tokens: %v\n", want)
	fmt.Printf("offloaded tokens:    %v\n", got)
	fmt.Printf("peak RSS: %s\n", peakRSS())
	if fmt.Sprint(want) != fmt.Sprint(got) {
		return fmt.Errorf("offloaded generation differs from the fully loaded model's")
	}
	fmt.Println("offloaded generation matches")
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "offloaded_generation:", err)
		os.Exit(1)
	}
}
