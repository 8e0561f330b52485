package test

// TestGuide runs the examples of docs/guide.md and compares what they print
// with the output the guide shows.
//
// The guide marks an example to run with an HTML comment on the line
// before its fence (invisible once rendered):
//
//	<!-- test -->
//	```sh
//	$ nczarrfs ls sample.zip         a command: the line after "$ "
//	> ...                            a continuation line (here-documents)
//	lat   <f4  [3]  lat              the output it prints (stdout and stderr)
//	...                              any number of lines
//	nczarrfs: mounted .* (re)        a line matching a regular expression
//	[1]                              the exit status, when it is not 0
//	```
//
// An example that cannot run here (an /etc/fstab line, AWS itself) is
// marked <!-- not tested: why --> instead; an sh block with "$ " lines and
// neither mark fails the test, so that no example is left unchecked by
// mistake. Every tested example runs, in the guide's order, in one bash
// (so cd and export carry over) in a folder that holds sample.zip, which
// ncgen writes from examples/sample.cdl at test time as
// examples/make-sample.sh does, with its tree uploaded to a MinIO server
// as s3://data/sample and the AWS variables pointing at that server.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/mountinfo"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// guidePath is the guide, relative to this package's folder.
const guidePath = "../docs/guide.md"

// guideWait bounds the whole run of the guide's examples: it catches a
// hang, it is no assertion about speed.
const guideWait = 10 * time.Minute

// guideCommand is one "$ " command of a tested example.
type guideCommand struct {
	line   int      // in the guide, of the "$ " line
	text   string   // the command, continuation lines joined with \n
	expect []string // the output lines the guide shows
	status int      // the exit status the guide shows ([N]), else 0
}

// parseGuide returns the commands of the tested examples of a guide, in
// order, and an error for an sh example that is neither tested nor
// marked as not tested.
func parseGuide(text string) ([]guideCommand, error) {
	var cmds []guideCommand
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	mark := "" // the comment before the current line, if any
	for sc.Scan() {
		n++
		line := sc.Text()
		if !strings.HasPrefix(line, "```sh") {
			if t := strings.TrimSpace(line); t != "" {
				mark = t
			}
			continue
		}
		start := n
		var block []string
		closed := false
		for sc.Scan() {
			n++
			if strings.HasPrefix(sc.Text(), "```") {
				closed = true
				break
			}
			block = append(block, sc.Text())
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the sh block is not closed", start)
		}
		tested := mark == "<!-- test -->"
		exempt := strings.HasPrefix(mark, "<!-- not tested:")
		mark = ""
		session := false
		for _, l := range block {
			session = session || strings.HasPrefix(l, "$ ")
		}
		switch {
		case tested && !session:
			return nil, fmt.Errorf("line %d: a tested block has no \"$ \" command", start)
		case !tested && !exempt && session:
			return nil, fmt.Errorf("line %d: an sh example with commands needs <!-- test --> or <!-- not tested: why --> on the line before it", start)
		case !tested:
			continue
		}
		for i, l := range block {
			switch {
			case strings.HasPrefix(l, "$ "):
				cmds = append(cmds, guideCommand{line: start + 1 + i, text: l[2:]})
			case len(cmds) == 0 || cmds[len(cmds)-1].line < start:
				return nil, fmt.Errorf("line %d: output before the block's first command", start+1+i)
			case strings.HasPrefix(l, "> ") && len(cmds[len(cmds)-1].expect) == 0:
				cmds[len(cmds)-1].text += "\n" + l[2:]
			default:
				c := &cmds[len(cmds)-1]
				c.expect = append(c.expect, l)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i := range cmds {
		c := &cmds[i]
		for len(c.expect) > 0 && strings.TrimSpace(c.expect[len(c.expect)-1]) == "" {
			c.expect = c.expect[:len(c.expect)-1] // as outputLines drops them
		}
		if k := len(c.expect); k > 0 {
			last := c.expect[k-1]
			if strings.HasPrefix(last, "[") && strings.HasSuffix(last, "]") {
				if s, err := strconv.Atoi(last[1 : len(last)-1]); err == nil {
					c.status, c.expect = s, c.expect[:k-1]
				}
			}
		}
	}
	return cmds, nil
}

// matchOutput reports whether the output lines got match the guide's
// lines want: equal but for trailing blanks, "..." for any number of
// lines, and "(re)" at the end for a regular expression of the line.
func matchOutput(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	w := want[0]
	if w == "..." {
		for i := 0; i <= len(got); i++ {
			if matchOutput(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	g := strings.TrimRight(got[0], " \t")
	if re, ok := strings.CutSuffix(w, " (re)"); ok {
		m, err := regexp.MatchString("^(?:"+re+")$", g)
		if err != nil || !m {
			return false
		}
	} else if strings.TrimRight(w, " \t") != g {
		return false
	}
	return matchOutput(want[1:], got[1:])
}

// outputLines splits a command's output into lines, without the empty
// lines at its end.
func outputLines(out string) []string {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func TestGuideParser(t *testing.T) {
	guide := "text\n<!-- test -->\n```sh\n$ echo a\na\n$ cat <<E\n> x\n> E\nx\n$ false\n[1]\n```\n" +
		"<!-- not tested: needs root -->\n```sh\n$ mount -a\n```\n```sh\nno commands here\n```\n"
	cmds, err := parseGuide(guide)
	if err != nil {
		t.Fatal(err)
	}
	want := []guideCommand{
		{line: 4, text: "echo a", expect: []string{"a"}},
		{line: 6, text: "cat <<E\nx\nE", expect: []string{"x"}},
		{line: 10, text: "false", expect: nil, status: 1},
	}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Errorf("parseGuide:\n got %+v\nwant %+v", cmds, want)
	}
	for _, bad := range []string{
		"```sh\n$ echo unmarked\n```\n",
		"<!-- test -->\n```sh\nno command\n```\n",
		"<!-- test -->\n```sh\n$ echo open\n",
	} {
		if _, err := parseGuide(bad); err == nil {
			t.Errorf("parseGuide(%q) succeeded, want an error", bad)
		}
	}
	for _, tt := range []struct {
		want, got []string
		ok        bool
	}{
		{[]string{"a", "b"}, []string{"a", "b  "}, true},
		{[]string{"a"}, []string{"a", "b"}, false},
		{[]string{"a", "...", "z"}, []string{"a", "b", "c", "z"}, true},
		{[]string{"a", "...", "z"}, []string{"a", "z"}, true},
		{[]string{"a", "...", "z"}, []string{"a", "b"}, false},
		{[]string{"n=[0-9]+ (re)"}, []string{"n=42"}, true},
		{[]string{"n=[0-9]+ (re)"}, []string{"n=4x"}, false},
		{[]string{"n=[0-9]+ (re)"}, []string{"xn=4"}, false},
	} {
		if got := matchOutput(tt.want, tt.got); got != tt.ok {
			t.Errorf("matchOutput(%q, %q) = %v, want %v", tt.want, tt.got, got, tt.ok)
		}
	}
}

func TestGuide(t *testing.T) {
	raw, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := parseGuide(string(raw))
	if err != nil {
		t.Fatalf("%s: %v", guidePath, err)
	}
	if len(cmds) == 0 {
		t.Fatalf("%s has no tested example", guidePath)
	}
	for _, tool := range []string{"ncgen", "ncdump", "zip", "jq", "gdalinfo", "getfattr", "gcc", "gfortran", "dd", "od", "cdo", "ncks"} {
		_, err := exec.LookPath(tool)
		testenv.Require(t, tool+" (scripts/install-deps.sh installs it)", err)
	}

	// The dataset: sample.zip in the folder the examples run in, and its
	// tree in MinIO as s3://data/sample.
	root := t.TempDir()
	work, store := filepath.Join(root, "work"), filepath.Join(root, "store")
	for _, d := range []string{work, store} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cdl, err := filepath.Abs("../examples/sample.cdl")
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(store, "sample.file")
	if out, err := exec.Command("ncgen", "-4", "-lb", "-o", "file://"+tree+"#mode=nczarr,file", cdl).CombinedOutput(); err != nil {
		t.Fatalf("ncgen %s: %v\n%s", cdl, err, out)
	}
	zipCmd := exec.Command("zip", "-qrX", filepath.Join(work, "sample.zip"), "sample.file")
	zipCmd.Dir = store
	if out, err := zipCmd.CombinedOutput(); err != nil {
		t.Fatalf("zip: %v\n%s", err, out)
	}
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "data")
	srv.PutTree(t, "data", "sample", tree)
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	t.Cleanup(func() { unmountUnder(t, work) })
	// The Icechunk section's repository: a copy of icechunk's own test
	// repository. The kerchunk section's: a netCDF-4 file in the bucket
	// as s3://data/model.nc and its references as model.json.
	if err := os.CopyFS(filepath.Join(work, "repo.icechunk"), os.DirFS(icechunkFixture(t, "test-repo-v2"))); err != nil {
		t.Fatal(err)
	}
	kf := kerchunkFixture(t)
	orig, err := os.ReadFile(filepath.Join(kf.dir, "orig.nc"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "data", map[string][]byte{"model.nc": orig})
	writeFile(t, filepath.Join(work, "model.json"), kf.refs(t, "v1.json", `"ORIGNC"`, `"s3://data/model.nc"`))

	// One bash runs every command, each with its output in a file of its
	// own and its exit status after it.
	outDir := filepath.Join(root, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	fmt.Fprintf(&script, "cd %q || exit 99\n", work)
	for i, c := range cmds {
		fmt.Fprintf(&script, "{ %s\n} >%q 2>&1 </dev/null\necho $? >%q\n", c.text,
			filepath.Join(outDir, strconv.Itoa(i)), filepath.Join(outDir, strconv.Itoa(i)+".status"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), guideWait)
	defer cancel()
	bash := exec.CommandContext(ctx, "bash", "--noprofile", "--norc")
	bash.Stdin = strings.NewReader(script.String())
	// PATH: the binary, the mount(8) helper link that make install makes,
	// and /usr/bin's python3 (the one with numpy) before any other.
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nczarrfs", "mount.fuse.nczarrfs"} {
		if err := os.Symlink(nczarrfsBinary(t), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	bash.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:"+os.Getenv("PATH"), "LC_ALL=C.UTF-8")
	if out, err := bash.CombinedOutput(); err != nil {
		t.Fatalf("running the guide's examples: %v\n%s", err, out)
	}

	for i, c := range cmds {
		out, err := os.ReadFile(filepath.Join(outDir, strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("%s:%d: $ %s: no output file: %v", guidePath, c.line, c.text, err)
		}
		st, err := os.ReadFile(filepath.Join(outDir, strconv.Itoa(i)+".status"))
		if err != nil {
			t.Fatalf("%s:%d: $ %s: no exit status: %v", guidePath, c.line, c.text, err)
		}
		status, _ := strconv.Atoi(strings.TrimSpace(string(st)))
		got := outputLines(string(out))
		if status != c.status || !matchOutput(c.expect, got) {
			t.Errorf("%s:%d: $ %s\nexit status %d, guide says %d; output:\n%s\nguide shows:\n%s",
				guidePath, c.line, c.text, status, c.status, strings.Join(got, "\n"), strings.Join(c.expect, "\n"))
		}
	}
}

// unmountUnder lazily unmounts whatever is still mounted below dir (an
// example that failed before its unmount).
func unmountUnder(t *testing.T, dir string) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.Mountpoint, dir+"/") {
			t.Errorf("%s is still mounted after the guide's examples", m.Mountpoint)
			_ = exec.Command("fusermount3", "-u", "-z", m.Mountpoint).Run()
		}
	}
}
