package accel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A context already done: the call does not start, and nothing changes.
func TestContextDoneBeforeTheCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a, err := NewAcceleratorContext(ctx, AcceleratorOptions{CPU: true}); !errors.Is(err, context.Canceled) || a != nil {
		t.Fatalf("NewAcceleratorContext: %v, %v", a, err)
	}
	acc := newCPU(t, AcceleratorOptions{})
	if err := acc.WaitForEveryoneContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitForEveryoneContext: %v", err)
	}
	x := must[*Tensor](t)(NewTensor([]float32{1, 2}, 2))
	defer x.Close()
	if _, err := acc.GatherContext(ctx, x); !errors.Is(err, context.Canceled) {
		t.Fatalf("GatherContext: %v", err)
	}
	if _, err := acc.SaveStateContext(ctx, t.TempDir()+"/ckpt", true); !errors.Is(err, context.Canceled) {
		t.Fatalf("SaveStateContext: %v", err)
	}
	// Usable as before, and a live context runs the call.
	g := must[*Tensor](t)(acc.GatherContext(context.Background(), x))
	defer g.Close()
	ok(t, acc.WaitForEveryoneContext(context.Background()))
}

// A rendezvous whose peer never comes: the deadline returns at once, long
// before the accelerator's own Timeout ends the background rendezvous.
func TestContextDeadlineEndsAWaitingRendezvous(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for k, v := range map[string]string{"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
		"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": fmt.Sprint(port)} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	a, err := NewAcceleratorContext(ctx, AcceleratorOptions{CPU: true, Timeout: 3 * time.Second})
	if !errors.Is(err, context.DeadlineExceeded) || a != nil {
		t.Fatalf("NewAcceleratorContext: %v, %v", a, err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("returned after %v, not at the context's deadline", elapsed)
	}
	time.Sleep(4 * time.Second) // the background rendezvous times out and frees its store
}

// An abandoned collective across 2 real processes: rank 0 stops waiting at its
// deadline, the accelerator refuses other calls while the barrier is pending,
// and works again once rank 1 arrives.
func TestContextThroughAccelLaunch(t *testing.T) {
	launcher := os.Getenv("ACCEL_CLI")
	if launcher == "" {
		t.Skip("ACCEL_CLI (the accel command) is not set; run through CTest")
	}
	cmd := exec.Command(launcher, "launch", "--nproc_per_node", "2", "--master_port", "0",
		os.Args[0], "-test.run=^TestContextWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ACCEL_GO_CONTEXT_WORKER=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[rank 0] context ok") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestContextWorker(t *testing.T) {
	if os.Getenv("ACCEL_GO_CONTEXT_WORKER") == "" {
		t.Skip("run by TestContextThroughAccelLaunch")
	}
	acc := newCPU(t, AcceleratorOptions{Timeout: 60 * time.Second})
	rank := must[int](t)(acc.ProcessIndex())
	if rank == 1 {
		time.Sleep(2 * time.Second) // rank 0's deadline passes meanwhile
		ok(t, acc.WaitForEveryone())
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := acc.WaitForEveryoneContext(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitForEveryoneContext: %v", err)
		}
		_, err = acc.NumProcesses()
		wantError(t, err, ErrState, "WaitForEveryone, abandoned when its context ended, is still running")
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err = acc.NumProcesses(); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still busy: %v", err)
			}
		}
	}
	x := must[*Tensor](t)(NewTensor([]float32{float32(rank)}, 1))
	defer x.Close()
	g := must[*Tensor](t)(acc.GatherContext(context.Background(), x))
	defer g.Close()
	if v := must[[]float32](t)(g.Float32s()); len(v) != 2 || v[0] != 0 || v[1] != 1 {
		t.Fatalf("gathered %v", v)
	}
	ok(t, acc.Print("context ok"))
}
