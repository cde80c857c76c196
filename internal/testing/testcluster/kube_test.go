package testcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API server comes up, serves Leases with numeric resourceVersions and
// 409 on a stale one, and keeps its data across Stop and Start.
func TestKubeLifecycle(t *testing.T) {
	k := NewKube(t, KubeOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := k.Namespace(t, "lifecycle")
	leases := k.Client(t).CoordinationV1().Leases(ns)
	holder := "a"
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := l.DeepCopy()
	other := "b"
	l.Spec.HolderIdentity = &other
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Update(ctx, stale, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "modified") {
		t.Fatalf("update with a stale resourceVersion: %v, want a conflict", err)
	}

	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	if k.Running() {
		t.Fatal("running after Stop")
	}
	if _, err := leases.Get(ctx, "job", metav1.GetOptions{}); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	got, err := leases.Get(ctx, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.HolderIdentity != "b" {
		t.Fatalf("after a restart: %+v", got.Spec)
	}
	kc, err := k.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kc); err != nil {
		t.Fatal(err)
	}
	dir := k.Dir()
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokens.csv")); !os.IsNotExist(err) {
		t.Fatalf("the directory survived Close: %v", err)
	}
}

// The shared server is started once.
func TestPackageKubeIsShared(t *testing.T) {
	a := PackageKube(t)
	b := PackageKube(t)
	if a != b {
		t.Fatal("two servers")
	}
	t.Cleanup(StopPackageKube)
}

// A missing binary is reported with what to do about it.
func TestKubeMissingBinary(t *testing.T) {
	t.Setenv(KubeAPIServerEnv, filepath.Join(t.TempDir(), "no-such-kube-apiserver"))
	_, err := StartKube(KubeOptions{})
	if err == nil || !strings.Contains(err.Error(), "scripts/kube.sh") {
		t.Fatalf("StartKube with a missing binary: %v", err)
	}
}
