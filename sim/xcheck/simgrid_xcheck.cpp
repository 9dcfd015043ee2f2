/* simgrid_xcheck.cpp - the same ring collectives as lbscale's cost model,
 * run by an independent simulator (SimGrid's s4u API, flow-level network
 * models) on the same platform, for the validation item "lbscale vs
 * SimGrid" (sim/xcheck/xcheck.py drives it and joins the two sides).
 *
 *   simgrid_xcheck --platform FILE.json [--gpus 2..256] [--bytes 1K,1M]
 *                  [--coll allreduce,allgather] [--proto Simple]
 *                  [--latency pipe|links] [--slots 8] [--window 8]
 *                  [--json] [--cfg=name:value ...]
 *
 * What is shared with lbscale: only the platform file's numbers (read with
 * the sim library's validating reader).  Nothing of coll.c is used: times
 * come from SimGrid moving every block of the algorithm as a flow, with
 * max-min fair sharing of every link the flows cross.
 *
 * The SimGrid platform (one full zone, explicit routes, built in memory):
 *   - one host per GPU; per GPU a split-duplex "nvl" link of
 *     f x intra_bw_gbs per direction (GPU <-> NVSwitch): an intra-node
 *     route is [nvl_i UP, nvl_j DOWN];
 *   - per node `nics` split-duplex NIC links of f x nic_gbps/8;
 *   - fat-tree: per leaf (nodes_per_leaf nodes) one split-duplex uplink of
 *     f x L x Bn / oversubscription (the leaf's aggregate uplink capacity,
 *     perfectly load-balanced); above the leaves a non-blocking core (no
 *     link).  Flat fabric: no uplinks.  A route between nodes is
 *     [nic UP, (leaf up UP, other leaf up DOWN,) nic DOWN].
 *   - f = the protocol's bw_factor; latencies: an intra-node hop ai =
 *     intra_hop_us, an inter-node hop under one leaf an = inter_hop_us +
 *     fabric.lat_us, one across the spine as = inter_hop_us +
 *     fabric.lat_spine_us (with --latency links: an/2 on each NIC link,
 *     (as - an)/2 on each leaf uplink, so a route between leaves, which
 *     crosses two uplinks, pays as; hop_lat), the per-call base_lat_us as
 *     a sleep before the first send.
 *   Routes are symmetric (LV08's cross-traffic needs the way back).
 *
 * The algorithms, as NCCL runs them (what lbscale's ring formulas
 * describe): C = g channels (g = GPUs per node used), each a ring over all
 * P GPUs carrying 1/C of the data.  Inside a node, channel c visits the
 * GPUs from c+1 to c (mod g), so every GPU is the exit GPU of one channel;
 * the exit GPU's block goes out on NIC (c mod nics) and comes in on the
 * same rail of the next node; all other hops are NVLink.  Per channel and
 * rank one actor: step s sends one block to the right neighbour and
 * receives one from the left; the block of step s+1 is the one received
 * at step s (the data dependency of reduce-scatter / allgather), so a rank
 * sends step s+1 as soon as its step-s block has arrived.
 *   allreduce: 2(P-1) steps of n/(P C) bytes per channel (reduce-scatter +
 *              allgather; the reduction's arithmetic is not timed, as in
 *              lbscale);
 *   allgather: P-1 steps of m/C bytes (m = each rank's contribution, the
 *              trace-v1 convention lbscale uses).
 *
 * How one ring connection carries its blocks (--latency):
 *   pipe  (default) a FIFO pipe, like an RDMA queue pair or a TCP stream:
 *         block s starts moving when block s-1 has left and its data is
 *         there, moves at its max-min share of every link on the route
 *         (SimGrid, links with zero latency), and arrives one hop latency
 *         (ai, an or as: hop_lat, times SimGrid's network/latency-factor)
 *         after it left.
 *         Latencies of consecutive blocks overlap; bandwidth is never
 *         split between two blocks of the same connection.  The receiver
 *         keeps --slots receives posted (NCCL_STEPS = 8).  SimGrid's TCP
 *         window bound (network/TCP-gamma / (2 x latency)) is applied as
 *         each flow's rate cap, as SimGrid does from route latencies.
 *   links the latencies sit on SimGrid's links (ai/2 per nvl link, an/2 per
 *         NIC link, (as - an)/2 per leaf uplink) and each connection may
 *         have --window blocks in flight
 *         at once, all sharing bandwidth as separate flows (SimGrid's
 *         native way; --window 1 is an MPI-style sendrecv ring).  Kept to
 *         show how much the fluid model's processor sharing of one
 *         connection's blocks costs (see sim/README.md).
 * A collective's time = base_lat + until the last block has arrived.
 * Block sizes are rounded to whole bytes (SimGrid sizes are integers).
 *
 * All the (coll, P, bytes) cases run one after another in one simulation
 * on one platform built for the largest P (smaller P use the first nodes;
 * P <= GPUs per node uses the first P GPUs of node 0).
 *
 * Output: one line per case, a table or (--json) one JSON object per line:
 *   {"coll","platform","gpus","bytes","time_us","channels","latency",
 *    "slots","window","comms","network_model","latency_factor",
 *    "bandwidth_factor","crosstraffic","tcp_gamma","simgrid"}.
 * Exit 2 on bad input (one line on stderr naming the option or field).
 */
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>
#include <xbt/config.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lbscale_sim.h"
#include "lbscale/param.h"

namespace sg4 = simgrid::s4u;

XBT_LOG_NEW_DEFAULT_CATEGORY(lbs_xcheck, "lbscale vs SimGrid cross-check");

namespace {

[[noreturn]] void bad(const char* what, const std::string& why)
{
    std::fprintf(stderr, "simgrid_xcheck: %s: %s\n", what, why.c_str());
    std::exit(2);
}

struct Case {
    std::string coll;   /* "allreduce" | "allgather" */
    long P;
    double bytes;
    double time = 0;
    long comms = 0;
};

struct Plat {
    const lbs_sim_platform* pl;
    long gpn, nics, L;
    double ai, an, as, a0, f;
    bool fat;
    bool pipe;          /* --latency pipe (else links) */
    long slots, W;      /* pipe: receives posted ahead; links: window */
    double lf, gamma;   /* SimGrid's network/latency-factor, TCP-gamma */
    long maxP;
    std::vector<sg4::Host*> host;                    /* node * gpn + gpu */
    std::vector<sg4::SplitDuplexLink*> nvl, nic, up; /* per GPU/NIC/leaf */
};

/* GPUs per node used at P. */
long g_of(const Plat& p, long P) { return P < p.gpn ? P : p.gpn; }

/* Host index of ring position pos of channel c at P. */
long host_at(const Plat& p, long P, long c, long pos)
{
    long g = g_of(p, P);
    long node = pos / g, j = pos % g;
    long entry = (c + 1) % g;
    return node * p.gpn + (entry + j) % g;
}

using Link = sg4::LinkInRoute;

/* Latency of the hop from host a to host b: inside a node ai; between
 * nodes an, or as when the route leaves the leaf (it crosses the two leaf
 * uplinks). */
double hop_lat(const Plat& p, long a, long b)
{
    long na = a / p.gpn, nb = b / p.gpn;
    if (na == nb)
        return p.ai;
    return p.fat && na / p.L != nb / p.L ? p.as : p.an;
}

std::vector<Link> route_links(const Plat& p, long a, long b)
{
    long na = a / p.gpn, nb = b / p.gpn;
    if (na == nb)
        return {Link(p.nvl[a], Link::Direction::UP),
                Link(p.nvl[b], Link::Direction::DOWN)};
    long rail = (a % p.gpn) % p.nics;
    std::vector<Link> r{Link(p.nic[na * p.nics + rail], Link::Direction::UP)};
    if (p.fat && na / p.L != nb / p.L) {
        r.emplace_back(p.up[na / p.L], Link::Direction::UP);
        r.emplace_back(p.up[nb / p.L], Link::Direction::DOWN);
    }
    r.emplace_back(p.nic[nb * p.nics + rail], Link::Direction::DOWN);
    return r;
}

void build_platform(Plat& p, const std::vector<Case>& cases)
{
    auto* zone = sg4::create_full_zone("lbscale");
    long nodes = (p.maxP + p.gpn - 1) / p.gpn;
    if (p.maxP < p.gpn)
        nodes = 1;
    char name[64];
    for (long k = 0; k < nodes; k++)
        for (long i = 0; i < p.gpn; i++) {
            std::snprintf(name, sizeof name, "gpu-%ld-%ld", k, i);
            p.host.push_back(zone->create_host(name, 1e9)->seal());
            std::snprintf(name, sizeof name, "nvl-%ld-%ld", k, i);
            auto* l = zone->create_split_duplex_link(name, p.f * p.pl->intra_bw);
            l->set_latency(p.pipe ? 0 : p.ai / 2)->seal();
            p.nvl.push_back(l);
        }
    for (long k = 0; k < nodes; k++)
        for (long j = 0; j < p.nics; j++) {
            std::snprintf(name, sizeof name, "nic-%ld-%ld", k, j);
            auto* l = zone->create_split_duplex_link(name, p.f * p.pl->nic_bw);
            l->set_latency(p.pipe ? 0 : p.an / 2)->seal();
            p.nic.push_back(l);
        }
    if (p.fat)
        for (long s = 0; s < (nodes + p.L - 1) / p.L; s++) {
            std::snprintf(name, sizeof name, "leaf-%ld-up", s);
            double Bn = (double)p.nics * p.pl->nic_bw;
            auto* l = zone->create_split_duplex_link(
                name, p.f * (double)p.L * Bn / p.pl->oversub);
            l->set_latency(p.pipe ? 0 : (p.as - p.an) / 2)->seal();
            p.up.push_back(l);
        }
    /* Routes for every ring edge of every case; a pair's reverse is added
     * with it (symmetrical) unless it already exists. */
    std::set<std::pair<long, long>> have;
    std::set<long> done;
    for (const Case& cs : cases) {
        if (!done.insert(cs.P).second)
            continue;
        long g = g_of(p, cs.P);
        for (long c = 0; c < g; c++)
            for (long pos = 0; pos < cs.P; pos++) {
                long a = host_at(p, cs.P, c, pos);
                long b = host_at(p, cs.P, c, (pos + 1) % cs.P);
                if (a == b || have.count({a, b}))
                    continue;
                bool sym = !have.count({b, a});
                zone->add_route(p.host[a]->get_netpoint(),
                                p.host[b]->get_netpoint(), nullptr, nullptr,
                                route_links(p, a, b), sym);
                have.insert({a, b});
                if (sym)
                    have.insert({b, a});
            }
    }
    zone->seal();
}

int payload;   /* SimGrid moves a pointer; the simulated size is separate */

/* One channel of one rank, --latency links: S steps of `blk` bytes around
 * the ring, W sends in flight, receives posted W ahead. */
void links_actor(sg4::Mailbox* in, sg4::Mailbox* out, long S, uint64_t blk,
                 long W, double a0, double* finish)
{
    if (a0 > 0)
        sg4::this_actor::sleep_for(a0);
    std::vector<sg4::CommPtr> recv(S), send(S);
    std::vector<int*> got(S);
    long posted = 0;
    for (; posted < std::min(W, S); posted++)
        recv[posted] = in->get_async<int>(&got[posted]);
    for (long s = 0; s < S; s++) {
        if (s > 0) {
            recv[s - 1]->wait();
            recv[s - 1] = nullptr;   /* done: let SimGrid free it */
            if (posted < S) {
                recv[posted] = in->get_async<int>(&got[posted]);
                posted++;
            }
        }
        if (s >= W) {
            send[s - W]->wait();
            send[s - W] = nullptr;
        }
        send[s] = out->put_async(&payload, blk);
    }
    recv[S - 1]->wait();
    for (long s = std::max(0L, S - W); s < S; s++)
        send[s]->wait();
    *finish = sg4::Engine::get_clock();
}

/* One channel of one rank, --latency pipe: the outgoing connection is a
 * FIFO (block s leaves when block s-1 has left and block s's data has
 * arrived); a block received at time t (its last byte left the sender)
 * is usable at t + lat_in.  rate: the flow's cap (TCP window), <= 0 none. */
void pipe_actor(sg4::Mailbox* in, sg4::Mailbox* out, long S, uint64_t blk,
                long R, double a0, double lat_in, double rate, double* finish)
{
    if (a0 > 0)
        sg4::this_actor::sleep_for(a0);
    std::vector<sg4::CommPtr> recv(S);
    std::vector<int*> got(S);
    sg4::CommPtr prev;
    long posted = 0;
    for (; posted < std::min(R, S); posted++)
        recv[posted] = in->get_async<int>(&got[posted]);
    auto arrive = [&](long s) {   /* wait for block s to be usable */
        recv[s]->wait();
        double t = recv[s]->get_finish_time() + lat_in;
        recv[s] = nullptr;
        if (posted < S) {
            recv[posted] = in->get_async<int>(&got[posted]);
            posted++;
        }
        double now = sg4::Engine::get_clock();
        if (t > now)
            sg4::this_actor::sleep_for(t - now);
    };
    for (long s = 0; s < S; s++) {
        if (s > 0) {
            arrive(s - 1);
            prev->wait();            /* FIFO: block s-1 has left */
        }
        prev = out->put_init(&payload, blk);
        if (rate > 0)
            prev->set_rate(rate);
        prev->start();
    }
    arrive(S - 1);
    prev->wait();
    *finish = sg4::Engine::get_clock();
}

void controller(Plat* p, std::vector<Case>* cases)
{
    long id = 0;
    for (Case& cs : *cases) {
        long g = g_of(*p, cs.P), C = g, P = cs.P;
        bool ar = cs.coll == "allreduce";
        long S = ar ? 2 * (P - 1) : P - 1;
        double per = ar ? cs.bytes / (double)(P * C) : cs.bytes / (double)C;
        uint64_t blk = (uint64_t)std::llround(per);
        double t0 = sg4::Engine::get_clock();
        std::vector<double> fin((size_t)(P * C), t0);
        std::vector<sg4::ActorPtr> actors;
        char name[64];
        for (long c = 0; c < C; c++)
            for (long pos = 0; pos < P; pos++) {
                std::snprintf(name, sizeof name, "x%ld-c%ld-p%ld", id, c, pos);
                auto* in = sg4::Mailbox::by_name(name);
                std::snprintf(name, sizeof name, "x%ld-c%ld-p%ld", id, c,
                              (pos + 1) % P);
                auto* out = sg4::Mailbox::by_name(name);
                std::snprintf(name, sizeof name, "r%ld-c%ld", pos, c);
                long me = host_at(*p, P, c, pos);
                long left = host_at(*p, P, c, (pos + P - 1) % P);
                double* f = &fin[(size_t)(c * P + pos)];
                if (p->pipe) {
                    /* latency of the hop into me, and SimGrid's TCP
                     * window cap of the flow out of me */
                    long right = host_at(*p, P, c, (pos + 1) % P);
                    double lin = p->lf * hop_lat(*p, left, me);
                    double lout = p->lf * hop_lat(*p, me, right);
                    double rate = p->gamma > 0 && lout > 0
                                      ? p->gamma / (2 * lout) : -1;
                    actors.push_back(sg4::Actor::create(
                        name, p->host[me], pipe_actor, in, out, S, blk,
                        p->slots, p->a0, lin, rate, f));
                } else {
                    actors.push_back(sg4::Actor::create(
                        name, p->host[me], links_actor, in, out, S, blk,
                        p->W, p->a0, f));
                }
            }
        for (auto& a : actors)
            a->join();
        cs.time = *std::max_element(fin.begin(), fin.end()) - t0;
        cs.comms = S * P * C;
        id++;
    }
}

std::vector<std::string> split(const std::string& s)
{
    std::vector<std::string> out;
    size_t b = 0;
    while (b <= s.size()) {
        size_t e = s.find(',', b);
        if (e == std::string::npos)
            e = s.size();
        if (e > b)
            out.push_back(s.substr(b, e - b));
        b = e + 1;
    }
    return out;
}

const char usage[] =
    "usage: simgrid_xcheck --platform FILE.json [--gpus 2..256] [--bytes "
    "1K,1M,64M,1G]\n"
    "                      [--coll allreduce,allgather] [--proto Simple]\n"
    "                      [--latency pipe|links] [--slots 8] [--window 8]\n"
    "                      [--json] [--cfg=network/model:CM02 ...]\n"
    "Runs lbscale's ring allreduce / ring allgather on the platform in "
    "SimGrid\nand prints the simulated time of every (coll, gpus, bytes) "
    "case.\n"
    "  --latency pipe   each ring connection is a FIFO pipe; hop latencies "
    "overlap\n"
    "                   (default; --slots receives posted ahead)\n"
    "  --latency links  latencies on SimGrid's links, --window blocks in "
    "flight per\n"
    "                   connection sharing bandwidth\n"
    "  --cfg=...        any SimGrid option (default network model: LV08)\n"
    "The platform mapping and the algorithms: the header of "
    "sim/xcheck/simgrid_xcheck.cpp.\n";

/* The command line (after SimGrid's own --cfg/--log options). */
struct Opts {
    std::string platform, gpus = "2..256", bytes = "1K,1M,64M,1G",
                colls = "allreduce,allgather", proto = "Simple";
    long W = 8, slots = 8;
    std::string latency = "pipe";
    bool json = false;
};

Opts parse_opts(int argc, char** argv)
{
    Opts o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&](const char* what) -> std::string {
            if (i + 1 >= argc)
                bad(what, "needs a value (see --help)");
            return argv[++i];
        };
        if (a == "--platform") o.platform = val("--platform");
        else if (a == "--gpus") o.gpus = val("--gpus");
        else if (a == "--bytes") o.bytes = val("--bytes");
        else if (a == "--coll") o.colls = val("--coll");
        else if (a == "--proto") o.proto = val("--proto");
        else if (a == "--latency") {
            o.latency = val("--latency");
            if (o.latency != "pipe" && o.latency != "links")
                bad("--latency", "'" + o.latency + "': pipe or links");
        } else if (a == "--window" || a == "--slots") {
            std::string v = val(argv[i]);
            char* end;
            long x = std::strtol(v.c_str(), &end, 10);
            if (*end || x < 1 || x > 1000000)
                bad(a.c_str(), "'" + v + "' is not an integer >= 1");
            (a == "--window" ? o.W : o.slots) = x;
        } else if (a == "--json") o.json = true;
        else bad(argv[i], "unknown option (see --help)");
    }
    if (o.platform.empty())
        bad("simgrid_xcheck", "--platform is required (see --help)");
    return o;
}

/* The platform as the SimGrid model reads it (o's protocol and latency
 * mapping, SimGrid's configured factors). */
Plat plat_of(lbs_sim_platform* pl, const Opts& o)
{
    int pr = -1;
    for (int k = 0; k < LBS_SIM_NPROTO; k++)
        if (o.proto == lbs_sim_proto_name((lbs_sim_proto)k))
            pr = k;
    if (pr < 0 || !pl->proto[pr].enabled)
        bad("--proto", "'" + o.proto + "' is not a protocol the platform enables");
    Plat p{};
    p.pl = pl;
    p.gpn = pl->gpus_per_node;
    p.nics = pl->nics_per_node;
    p.fat = pl->fabric == LBS_SIM_FAT_TREE;
    p.L = p.fat ? pl->nodes_per_leaf : 1;
    p.a0 = pl->proto[pr].base_lat;
    p.ai = pl->proto[pr].intra_hop;
    p.an = pl->proto[pr].inter_hop + pl->net_lat;
    p.as = pl->proto[pr].inter_hop + pl->spine_lat;
    p.f = pl->proto[pr].bw_factor;
    p.pipe = o.latency == "pipe";
    p.slots = o.slots;
    p.W = o.W;
    namespace cfg = simgrid::config;
    p.lf = cfg::get_value<double>("network/latency-factor");
    p.gamma = cfg::get_value<double>("network/TCP-gamma");
    return p;
}

/* Every (coll, gpus, bytes) case of o, checked; p.maxP set. */
std::vector<Case> cases_of(const Opts& o, Plat& p)
{
    lbs_err err{};
    long* Pv = nullptr;
    size_t np = 0;
    if (lbs_sim_parse_gpus(o.gpus.c_str(), &Pv, &np, &err))
        bad("--gpus", err.msg);
    std::vector<Case> cases;
    std::vector<std::string> cl = split(o.colls), bl = split(o.bytes);
    for (const auto& c : cl)
        if (c != "allreduce" && c != "allgather")
            bad("--coll", "'" + c + "': allreduce or allgather");
    if (cl.empty() || bl.empty())
        bad("--coll/--bytes", "empty list");
    p.maxP = 0;
    for (size_t i = 0; i < np; i++) {
        long P = Pv[i];
        lbs_sim_net net;
        if (lbs_sim_net_init(&net, p.pl, P, &err))
            bad("--gpus", err.msg);
        if (P < 2)
            bad("--gpus", "a ring needs at least 2 GPUs");
        if (P > p.gpn && (p.nics > p.gpn || p.gpn % p.nics))
            bad("--platform", "node.nics must divide node.gpus (one rail per "
                "exit GPU)");
        p.maxP = std::max(p.maxP, P);
        for (const auto& c : cl)
            for (const auto& b : bl) {
                size_t v;
                if (lbs_parse_size(b.c_str(), &v) || v == 0)
                    bad("--bytes", "'" + b + "' is not a size (K M G, Ki Mi Gi)");
                cases.push_back(Case{c, P, (double)v});
            }
    }
    std::free(Pv);
    return cases;
}

/* The simulated times, with SimGrid's settings (a header or per row). */
void print_cases(const Plat& p, const Opts& o,
                 const std::vector<Case>& cases)
{
    namespace cfg = simgrid::config;
    const lbs_sim_platform* pl = p.pl;
    const std::string& latency = o.latency;
    long slots = o.slots, W = o.W;
    bool json = o.json;
    const std::string& model = cfg::get_value<std::string>("network/model");
    double lf = p.lf;
    double bf = cfg::get_value<double>("network/bandwidth-factor");
    bool xt = cfg::get_value<bool>("network/crosstraffic");
    double gamma = p.gamma;
    if (!json)
        std::printf("# SimGrid %d.%d, network/model %s, latency-factor %g, "
                    "bandwidth-factor %g, crosstraffic %d, TCP-gamma %g; "
                    "platform %s, latency %s, slots %ld, window %ld\n"
                    "# %-10s %6s %14s %14s %10s\n",
                    SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR,
                    model.c_str(), lf, bf, (int)xt, gamma, pl->name,
                    latency.c_str(), slots, W,
                    "coll", "gpus", "bytes", "time(us)", "comms");
    for (const Case& c : cases) {
        if (json)
            std::printf("{\"coll\":\"%s\",\"platform\":\"%s\",\"gpus\":%ld,"
                        "\"bytes\":%.0f,\"time_us\":%.6f,\"channels\":%ld,"
                        "\"latency\":\"%s\",\"slots\":%ld,"
                        "\"window\":%ld,\"comms\":%ld,\"network_model\":\"%s\","
                        "\"latency_factor\":%g,\"bandwidth_factor\":%g,"
                        "\"crosstraffic\":%s,\"tcp_gamma\":%g,"
                        "\"simgrid\":\"%d.%d.%d\"}\n",
                        c.coll.c_str(), pl->name, c.P, c.bytes, c.time * 1e6,
                        g_of(p, c.P), latency.c_str(), slots, W, c.comms,
                        model.c_str(), lf, bf,
                        xt ? "true" : "false", gamma, SIMGRID_VERSION_MAJOR,
                        SIMGRID_VERSION_MINOR, SIMGRID_VERSION_PATCH);
        else
            std::printf("  %-10s %6ld %14.0f %14.3f %10ld\n", c.coll.c_str(),
                        c.P, c.bytes, c.time * 1e6, c.comms);
    }
}

} // namespace

int main(int argc, char** argv)
{
    for (int i = 1; i < argc; i++)
        if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
            std::fputs(usage, stdout);
            return 0;
        }
    bool own_stack = true;
    for (int i = 1; i < argc; i++)
        if (std::strstr(argv[i], "contexts/stack-size"))
            own_stack = false;
    sg4::Engine e(&argc, argv);   /* consumes --cfg=... and --log=... */
    /* thousands of actors: their code keeps its state on the heap, so a
     * small stack keeps the address space modest (unless asked for) */
    if (own_stack)
        sg4::Engine::set_config("contexts/stack-size", 256);
    Opts o = parse_opts(argc, argv);
    lbs_err err{};
    lbs_sim_platform* pl = nullptr;
    if (lbs_sim_platform_load(o.platform.c_str(), &pl, &err))
        bad("--platform", err.msg);
    Plat p = plat_of(pl, o);
    std::vector<Case> cases = cases_of(o, p);
    build_platform(p, cases);
    sg4::Actor::create("controller", p.host[0], controller, &p, &cases);
    e.run();

    print_cases(p, o, cases);
    lbs_sim_platform_free(pl);
    return 0;
}
