package accel

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Profiling and autocast belong to the OS thread that began them (LibTorch
// keeps both per thread). A goroutine that sleeps inside the body is resumed on
// whichever thread is free, so the scope must keep it on its own thread: these
// bodies sleep between calls while other goroutines keep threads busy.
func hopBetweenThreads(t *testing.T, calls int, call func() error) {
	t.Helper()
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for i := 0; i < 2*runtime.GOMAXPROCS(0); i++ {
		busy.Add(1)
		go func() {
			defer busy.Done()
			for {
				select {
				case <-stop:
					return
				default:
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
	}
	defer func() { close(stop); busy.Wait() }()
	for i := 0; i < calls; i++ {
		time.Sleep(200 * time.Microsecond)
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestProfileRecordsEveryCallOfItsBody(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	model := must[*Model](t)(ModelFromJSON(linear))
	input := must[*Tensor](t)(NewTensor(make([]float32, 4), 1, 4))
	dir := t.TempDir()
	const forwards = 40
	ok(t, acc.Profile(dir, func() error {
		hopBetweenThreads(t, forwards, func() error {
			out, err := model.Forward(input)
			out.Close()
			return err
		})
		return nil
	}))
	trace := string(must[[]byte](t)(os.ReadFile(filepath.Join(dir, "trace_0.json"))))
	if got := strings.Count(trace, `"accel::forward"`); got != forwards {
		t.Fatalf("the trace holds %d of the body's %d forwards", got, forwards)
	}
}

func TestAutocastCoversEveryCallOfItsBody(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{MixedPrecision: "bf16"})
	model := must[*Model](t)(ModelFromJSON(linear))
	input := must[*Tensor](t)(NewTensor(make([]float32, 4), 1, 4))
	ok(t, acc.Autocast(true, func() error {
		hopBetweenThreads(t, 40, func() error {
			out, err := model.Forward(input)
			if err != nil {
				return err
			}
			defer out.Close()
			if dtype := must[DType](t)(out.DType()); dtype != BFloat16 {
				t.Errorf("a forward inside Autocast gave %v", dtype)
			}
			return nil
		})
		return nil
	}))
}
