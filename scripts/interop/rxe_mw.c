/*
 * rxe_mw: memory windows and invalidation between two RC peers (rxe4j's interop peer for
 * scripts/interop-live.sh; the Java side is io.rxe4j.examples.interop.RxeMwPeer).
 *
 *   server: rxe_mw -d rxe0 -g GIDX [-p PORT] [-m MTU]
 *   client: rxe_mw -d rxe0 -g GIDX [-p PORT] [-m MTU] [-t TEST] [-x STATUS] [-y STATUS] SERVER_IP
 *
 * TCP, one line each way, client first (hex fields, the GID as 32 hex digits in wire order):
 *   client: "QPN:PSN:GID:TEST\n"             TEST = windows | localinv | outside | badinv
 *   server: "QPN:PSN:VADDR:RKEY1:RKEY2:GID\n"
 * The server's 16 KiB buffer (LOCAL_WRITE | MW_BIND, bytes 0x40 + i % 26) has a type 1 window
 * RKEY1 over [0, 4096) bound with ibv_bind_mw and a type 2 window RKEY2 over [4096, 8192) bound
 * with an IBV_WR_BIND_MW work request, both REMOTE_READ | REMOTE_WRITE. After a test that sends,
 * the server reports its receive completion: "RECV STATUS FLAGS INVALIDATED_RKEY\n" (hex; FLAGS as
 * wc_flags holds them: over rdma_rxe the invalidation is bit 2, the kernel's IB_WC_WITH_INVALIDATE, not
 * libibverbs' IBV_WC_WITH_INV, bit 3).
 * The client ends with "done\n".
 *
 * Tests (client):
 *   windows  WRITE 600 B and READ it back through each window; READ all 4096 B of window 1; SEND_WITH_INV
 *            of RKEY2: the server's receive must carry IBV_WC_WITH_INV and RKEY2; then a WRITE through
 *            RKEY2 must fail with REM_ACCESS_ERR.
 *   localinv WRITE through RKEY2; then "inv\n": the server posts IBV_WR_LOCAL_INV of RKEY2 and answers
 *            "INV STATUS\n" (hex; 0 expected); then a WRITE through RKEY2 must fail with REM_ACCESS_ERR.
 *   outside  WRITE 64 B at window 1's end - 32 (inside the MR, half outside the window): its status must
 *            be -x (default 0, IBV_WC_SUCCESS).
 *   badinv   SEND_WITH_INV of RKEY1 (a type 1 window cannot be invalidated): the sender's status must be -x
 *            (default 0), the server's receive status -y (default 9, IBV_WC_REM_INV_REQ_ERR).
 * Exit 0 when every check of the test passed.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUFSZ 16384
#define WIN 4096
#define LEN 600

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr, *lmr;
static unsigned char *buf, *lbuf;
static int failures;
static int expect_send = 0;	/* -x: outside: the WRITE's status; badinv: the SEND_WITH_INV's */
static int expect_recv = IBV_WC_REM_INV_REQ_ERR;	/* -y: badinv: the server's receive status */

static void die(const char *m) { fprintf(stderr, "rxe_mw: %s: %s\n", m, strerror(errno)); exit(2); }
static void fail(const char *m) { printf("FAILED: %s\n", m); failures++; }

static void gid_str(const union ibv_gid *g, char *s) { for (int i = 0; i < 16; i++) sprintf(s + 2 * i, "%02x", g->raw[i]); }
static void str_gid(const char *s, union ibv_gid *g)
{
	for (int i = 0; i < 16; i++) { unsigned v; sscanf(s + 2 * i, "%2x", &v); g->raw[i] = v; }
}

static int tcp(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = host ? 0 : AI_PASSIVE };
	struct addrinfo *res;
	char ps[16];
	int fd, one = 1;
	snprintf(ps, sizeof ps, "%d", port);
	if (getaddrinfo(host, ps, &hints, &res)) die("getaddrinfo");
	fd = socket(res->ai_family, res->ai_socktype, 0);
	if (fd < 0) die("socket");
	if (host) {
		for (int i = 0; connect(fd, res->ai_addr, res->ai_addrlen); i++) {
			if (i > 100) die("connect");
			usleep(100000);
		}
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 1)) die("bind/listen");
		int c = accept(fd, NULL, NULL);
		if (c < 0) die("accept");
		close(fd);
		fd = c;
	}
	freeaddrinfo(res);
	return fd;
}

static void put(int fd, const char *line) { if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) die("write"); }

static void get(int fd, char *line, int n)
{
	int i = 0;
	while (i < n - 1) {
		char c;
		if (read(fd, &c, 1) != 1) die("peer closed");
		if (c == '\n') break;
		line[i++] = c;
	}
	line[i] = 0;
}

/* the next completion within 20 s, or status -1 */
static struct ibv_wc next_wc(void)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 20;
	while (time(NULL) < end) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0) die("poll");
		if (n == 1) return wc;
		usleep(1000);
	}
	memset(&wc, 0, sizeof wc);
	wc.status = -1;
	return wc;
}

static void to_rts(uint32_t dqpn, uint32_t dpsn, uint32_t mypsn, union ibv_gid *dgid, int gidx, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) die("INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR; a.path_mtu = mtu; a.dest_qp_num = dqpn; a.rq_psn = dpsn;
	a.max_dest_rd_atomic = 4; a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1; a.ah_attr.grh.dgid = *dgid; a.ah_attr.grh.sgid_index = gidx; a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
			| IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) die("RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS; a.timeout = 19; a.retry_cnt = 7; a.rnr_retry = 7; a.sq_psn = mypsn; a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN
			| IBV_QP_MAX_QP_RD_ATOMIC)) die("RTS");
}

static int post(enum ibv_wr_opcode op, uint64_t laddr, uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t inv)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	if (op == IBV_WR_SEND_WITH_INV) wr.invalidate_rkey = inv;
	else { wr.wr.rdma.remote_addr = raddr; wr.wr.rdma.rkey = rkey; }
	if (ibv_post_send(qp, &wr, &bad)) die("post_send");
	struct ibv_wc wc = next_wc();
	printf("  %-14s len %4u at +0x%05" PRIx64 " rkey 0x%08x: %s\n", op == IBV_WR_RDMA_WRITE ? "WRITE" : op == IBV_WR_RDMA_READ
			? "READ" : "SEND_WITH_INV", len, raddr, op == IBV_WR_SEND_WITH_INV ? inv : rkey,
			(int)wc.status < 0 ? "no completion" : ibv_wc_status_str(wc.status));
	return wc.status;
}

static void server(int fd, int gidx, enum ibv_mtu mtu, union ibv_gid *mygid)
{
	char line[256], gs[33], test[32];
	union ibv_gid dgid;
	unsigned dqpn, dpsn;
	for (int i = 0; i < BUFSZ; i++) buf[i] = 0x40 + i % 26;
	get(fd, line, sizeof line);
	if (sscanf(line, "%x:%x:%32[0-9a-f]:%31s", &dqpn, &dpsn, gs, test) != 4) { fail("bad client line"); return; }
	str_gid(gs, &dgid);
	printf("client QPN 0x%06x PSN 0x%06x test %s\n", dqpn, dpsn, test);
	uint32_t mypsn = lrand48() & 0xffffff;
	to_rts(dqpn, dpsn, mypsn, &dgid, gidx, mtu);
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1), *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw1 || !mw2) die("ibv_alloc_mw");
	struct ibv_mw_bind b1 = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)buf, .length = WIN,
			.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE } };
	if (ibv_bind_mw(qp, mw1, &b1)) die("ibv_bind_mw");
	struct ibv_wc wc = next_wc();
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW) fail("type 1 bind");
	uint32_t rkey2 = ibv_inc_rkey(mw2->rkey);
	struct ibv_send_wr wr = { .wr_id = 2, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	wr.bind_mw.mw = mw2; wr.bind_mw.rkey = rkey2;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf + WIN, .length = WIN,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE };
	if (ibv_post_send(qp, &wr, &bad)) die("post BIND_MW");
	wc = next_wc();
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW) fail("type 2 bind");
	struct ibv_sge rs = { .addr = (uintptr_t)lbuf, .length = 4096, .lkey = lmr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rbad;
	if (ibv_post_recv(qp, &rwr, &rbad)) die("post_recv");
	gid_str(mygid, gs);
	printf("server QPN 0x%06x windows 0x%08x (type 1) 0x%08x (type 2) over %p\n", qp->qp_num, mw1->rkey, rkey2, buf);
	snprintf(line, sizeof line, "%06x:%06x:%016" PRIx64 ":%08x:%08x:%s\n", qp->qp_num, mypsn, (uint64_t)(uintptr_t)buf,
			mw1->rkey, rkey2, gs);
	put(fd, line);
	if (!strcmp(test, "localinv")) {
		get(fd, line, sizeof line);
		struct ibv_send_wr iwr = { .wr_id = 3, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED,
			.invalidate_rkey = rkey2 };
		if (ibv_post_send(qp, &iwr, &bad)) die("post LOCAL_INV");
		wc = next_wc();
		printf("client said '%s'; LOCAL_INV of 0x%08x: %s\n", line, rkey2,
				(int)wc.status < 0 ? "no completion" : ibv_wc_status_str(wc.status));
		snprintf(line, sizeof line, "INV %x\n", (int)wc.status < 0 ? 0xff : wc.status);
		put(fd, line);
	} else if (strcmp(test, "outside") != 0) {
		wc = next_wc();
		/* rdma_rxe hands user space the kernel's wc_flags: its IB_WC_WITH_INVALIDATE is bit 2, which
		 * libibverbs calls IBV_WC_IP_CSUM_OK (IBV_WC_WITH_INV is bit 3); invalidated_rkey is set either way */
		printf("receive: status %d (%s) opcode %d flags 0x%x invalidated_rkey 0x%08x\n", (int)wc.status,
				(int)wc.status < 0 ? "none" : ibv_wc_status_str(wc.status), wc.opcode, wc.wc_flags,
				wc.invalidated_rkey);
		snprintf(line, sizeof line, "RECV %x %x %08x\n", (int)wc.status < 0 ? 0xff : wc.status, wc.wc_flags,
				wc.invalidated_rkey);
		put(fd, line);
	}
	get(fd, line, sizeof line);
	struct ibv_qp_attr qa; struct ibv_qp_init_attr qia;
	ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia);
	printf("client said '%s'; QP state %d; window 1 bytes 100..: %.8s\n", line, qa.qp_state, buf + 100);
	ibv_dealloc_mw(mw1);
	ibv_dealloc_mw(mw2);
}

static void client(int fd, int gidx, enum ibv_mtu mtu, union ibv_gid *mygid, const char *test)
{
	char line[256], gs[33];
	union ibv_gid dgid;
	unsigned dqpn, dpsn, rkey1, rkey2, st, flags, inv;
	uint64_t va;
	uint32_t mypsn = lrand48() & 0xffffff;
	gid_str(mygid, gs);
	snprintf(line, sizeof line, "%06x:%06x:%s:%s\n", qp->qp_num, mypsn, gs, test);
	put(fd, line);
	get(fd, line, sizeof line);
	if (sscanf(line, "%x:%x:%" SCNx64 ":%x:%x:%32s", &dqpn, &dpsn, &va, &rkey1, &rkey2, gs) != 6) { fail("bad server line"); return; }
	str_gid(gs, &dgid);
	printf("server QPN 0x%06x VADDR 0x%016" PRIx64 " windows 0x%08x 0x%08x\n", dqpn, va, rkey1, rkey2);
	to_rts(dqpn, dpsn, mypsn, &dgid, gidx, mtu);
	uint64_t la = (uintptr_t)lbuf;
	for (int i = 0; i < LEN; i++) lbuf[i] = 'a' + i % 26;
	if (!strcmp(test, "windows")) {
		if (post(IBV_WR_RDMA_WRITE, la, LEN, va + 100, rkey1, 0)) fail("WRITE through window 1");
		if (post(IBV_WR_RDMA_READ, la + 4096, LEN, va + 100, rkey1, 0) || memcmp(lbuf, lbuf + 4096, LEN)) fail("READ window 1");
		if (post(IBV_WR_RDMA_WRITE, la, LEN, va + WIN + 200, rkey2, 0)) fail("WRITE through window 2");
		if (post(IBV_WR_RDMA_READ, la + 4096, LEN, va + WIN + 200, rkey2, 0) || memcmp(lbuf, lbuf + 4096, LEN)) fail("READ window 2");
		if (post(IBV_WR_RDMA_READ, la + 8192, WIN, va, rkey1, 0)) fail("READ all of window 1");
		for (int i = 0; i < WIN; i++) {
			unsigned char want = i >= 100 && i < 100 + LEN ? 'a' + (i - 100) % 26 : 0x40 + i % 26;
			if (lbuf[8192 + i] != want) { fail("window 1 bytes"); break; }
		}
		if (post(IBV_WR_SEND_WITH_INV, la, 64, 0, 0, rkey2)) fail("SEND_WITH_INV");
		get(fd, line, sizeof line);
		printf("server: %s\n", line);
		if (sscanf(line, "RECV %x %x %x", &st, &flags, &inv) != 3 || st != 0 || !(flags & (IBV_WC_WITH_INV | 4)) || inv != rkey2)
			fail("the server's receive does not carry IBV_WC_WITH_INV with window 2's rkey");
		if (post(IBV_WR_RDMA_WRITE, la, 16, va + WIN, rkey2, 0) != IBV_WC_REM_ACCESS_ERR)
			fail("a WRITE through the invalidated window 2 must fail with REM_ACCESS_ERR");
	} else if (!strcmp(test, "localinv")) {
		if (post(IBV_WR_RDMA_WRITE, la, LEN, va + WIN, rkey2, 0)) fail("WRITE through window 2");
		put(fd, "inv\n");
		get(fd, line, sizeof line);
		printf("server: %s\n", line);
		if (strcmp(line, "INV 0")) fail("the server's LOCAL_INV did not succeed");
		if (post(IBV_WR_RDMA_WRITE, la, 16, va + WIN, rkey2, 0) != IBV_WC_REM_ACCESS_ERR)
			fail("a WRITE through the locally invalidated window 2 must fail with REM_ACCESS_ERR");
	} else if (!strcmp(test, "outside")) {
		int s = post(IBV_WR_RDMA_WRITE, la, 64, va + WIN - 32, rkey1, 0);
		printf("outside-window WRITE: %s\n", s < 0 ? "no completion" : ibv_wc_status_str(s));
		if (s != expect_send) fail("the outside-window WRITE's status is not the expected one (-x)");
	} else if (!strcmp(test, "badinv")) {
		int s = post(IBV_WR_SEND_WITH_INV, la, 64, 0, 0, rkey1);
		get(fd, line, sizeof line);
		printf("SEND_WITH_INV of the type 1 window: sender %s; server: %s\n", s < 0 ? "no completion" : ibv_wc_status_str(s), line);
		if (s != expect_send) fail("the SEND_WITH_INV's status is not the expected one (-x)");
		if (sscanf(line, "RECV %x", &st) != 1 || (int)st != expect_recv) fail("the server's receive status is not the expected one (-y)");
	} else {
		fail("unknown test");
	}
	put(fd, "done\n");
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0", *test = "windows";
	int gidx = 0, port = 18560, c;
	enum ibv_mtu mtu = IBV_MTU_1024;
	while ((c = getopt(argc, argv, "d:g:p:m:t:x:y:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'm': mtu = atoi(optarg) == 256 ? IBV_MTU_256 : atoi(optarg) == 4096 ? IBV_MTU_4096 : IBV_MTU_1024; break;
		case 't': test = optarg; break;
		case 'x': expect_send = atoi(optarg); break;
		case 'y': expect_recv = atoi(optarg); break;
		default: return 2;
		}
	}
	srand48(getpid() * time(NULL));
	struct ibv_device **list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++) if (!strcmp(ibv_get_device_name(list[i]), dev)) ctx = ibv_open_device(list[i]);
	if (!ctx) die("open device");
	union ibv_gid mygid;
	if (ibv_query_gid(ctx, 1, gidx, &mygid)) die("query_gid");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUFSZ);
	lbuf = aligned_alloc(4096, 16384);
	memset(lbuf, 0, 16384);
	mr = ibv_reg_mr(pd, buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	lmr = ibv_reg_mr(pd, lbuf, 16384, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	qp = ibv_create_qp(pd, &qa);
	if (!pd || !cq || !mr || !lmr || !qp) die("resources");
	int fd = tcp(optind < argc ? argv[optind] : NULL, port);
	if (optind < argc) client(fd, gidx, mtu, &mygid, test);
	else server(fd, gidx, mtu, &mygid);
	close(fd);
	printf("%s: %d failures\n", optind < argc ? "client" : "server", failures);
	return failures ? 1 : 0;
}
