-- rxe4j.lua: a Wireshark post-dissector for what Wireshark's InfiniBand (RoCEv2) dissector does not
-- decode in rxe4j's traffic (docs/wire.md, "Wireshark"):
--   * the OPFN extended bit (BTH DW1 bit 24) on any RoCEv2 packet (tid-opfn-facts.md §1.1);
--   * TID RDMA opcodes 0xE0-0xE7: KDETH (little-endian), the TID extension fields (big-endian),
--     the flow PSN in the BTH, and the TID list (little-endian entries) of READ_REQ and WRITE_RESP
--     (tid-opfn-facts.md §3; rxe4j TidHeader, Kdeth, TidEntry, FlowPsn);
--   * rxe4j's masked atomics: masked COMPARE_SWAP 0xF0 (44-byte MaskedCmpSwapETH) and field-wise
--     FETCH_ADD 0xF1 (AtomicETH layout; extensions.md §2);
--   * rxe4j's selective NAK 0xF2: the missing PSN ranges after a PSN-sequence NAK, 4 bytes each,
--     big-endian (count - 1) << 24 | first PSN (docs/wire.md, "Selective NAK").
-- It runs after the InfiniBand dissector and adds an "rxe4j" tree; filter on rxe4j.* fields.
-- Load: wireshark -X lua_script:tools/wireshark/rxe4j.lua (or tshark), or copy the file to
-- ~/.local/lib/wireshark/plugins/.

local rxe = Proto("rxe4j", "rxe4j RoCEv2 extensions")

local OPCODES = {
  [0xE0] = "TID_RDMA_WRITE_REQ", [0xE1] = "TID_RDMA_WRITE_RESP", [0xE2] = "TID_RDMA_WRITE_DATA",
  [0xE3] = "TID_RDMA_WRITE_DATA_LAST", [0xE4] = "TID_RDMA_READ_REQ", [0xE5] = "TID_RDMA_READ_RESP",
  [0xE6] = "TID_RDMA_RESYNC", [0xE7] = "TID_RDMA_ACK",
  [0xF0] = "RC_MASKED_COMPARE_SWAP", [0xF1] = "RC_MASKED_FETCH_ADD", [0xF2] = "RC_SELECTIVE_NAK",
}

local f = {
  opcode = ProtoField.string("rxe4j.opcode", "Opcode"),
  opfn = ProtoField.bool("rxe4j.opfn", "OPFN extended bit (BTH DW1 bit 24)"),
  -- KDETH (two little-endian dwords)
  kver = ProtoField.uint8("rxe4j.kdeth.kver", "KVER"),
  sh = ProtoField.bool("rxe4j.kdeth.sh", "SH"),
  intr = ProtoField.bool("rxe4j.kdeth.intr", "INTR"),
  tidctrl = ProtoField.uint8("rxe4j.kdeth.tidctrl", "TIDCTRL"),
  tid = ProtoField.uint16("rxe4j.kdeth.tid", "TID"),
  om = ProtoField.bool("rxe4j.kdeth.om", "OM (offset in 64-byte units)"),
  offset = ProtoField.uint16("rxe4j.kdeth.offset", "OFFSET"),
  offset_bytes = ProtoField.uint32("rxe4j.kdeth.offset_bytes", "Offset in the TID buffer (bytes)"),
  jkey = ProtoField.uint16("rxe4j.kdeth.jkey", "J_KEY", base.DEC),
  hcrc = ProtoField.uint16("rxe4j.kdeth.hcrc", "HCRC", base.HEX),
  -- TID extension
  va = ProtoField.uint64("rxe4j.tid.va", "RETH virtual address", base.HEX),
  rkey = ProtoField.uint32("rxe4j.tid.rkey", "RETH R_Key", base.HEX),
  dmalen = ProtoField.uint32("rxe4j.tid.dma_length", "RETH DMA length (bytes)"),
  syndrome = ProtoField.uint8("rxe4j.tid.aeth.syndrome", "AETH syndrome", base.HEX),
  msn = ProtoField.uint32("rxe4j.tid.aeth.msn", "AETH MSN", base.HEX),
  flow_psn = ProtoField.uint32("rxe4j.tid.flow_psn", "tid_flow_psn", base.HEX),
  flow_qp = ProtoField.uint32("rxe4j.tid.flow_qp", "tid_flow_qp", base.HEX),
  flow_index = ProtoField.uint8("rxe4j.tid.flow_index", "hardware flow index"),
  verbs_psn = ProtoField.uint32("rxe4j.tid.verbs_psn", "verbs_psn", base.HEX),
  verbs_qp = ProtoField.uint32("rxe4j.tid.verbs_qp", "verbs_qp", base.HEX),
  generation = ProtoField.uint16("rxe4j.tid.generation", "flow generation (BTH PSN 23:11)"),
  sequence = ProtoField.uint16("rxe4j.tid.sequence", "flow sequence (BTH PSN 10:0)"),
  entries = ProtoField.uint8("rxe4j.tid.entries", "TID list entries"),
  entry = ProtoField.uint32("rxe4j.tid.entry", "TID entry", base.HEX),
  entry_idx = ProtoField.uint16("rxe4j.tid.entry.idx", "IDX"),
  entry_ctrl = ProtoField.uint8("rxe4j.tid.entry.ctrl", "CTRL"),
  entry_pages = ProtoField.uint16("rxe4j.tid.entry.pages", "LEN (4 KiB pages)"),
  -- masked atomics
  m_va = ProtoField.uint64("rxe4j.masked.va", "Virtual address", base.HEX),
  m_rkey = ProtoField.uint32("rxe4j.masked.rkey", "R_Key", base.HEX),
  m_swap = ProtoField.uint64("rxe4j.masked.swap", "Swap data", base.HEX),
  m_compare = ProtoField.uint64("rxe4j.masked.compare", "Compare data", base.HEX),
  m_swap_mask = ProtoField.uint64("rxe4j.masked.swap_mask", "Swap mask", base.HEX),
  m_compare_mask = ProtoField.uint64("rxe4j.masked.compare_mask", "Compare mask", base.HEX),
  m_add = ProtoField.uint64("rxe4j.masked.add", "Add data", base.HEX),
  m_boundary = ProtoField.uint64("rxe4j.masked.field_boundary", "Field boundary mask", base.HEX),
  -- selective NAK
  sn_ranges = ProtoField.uint8("rxe4j.snak.ranges", "Missing ranges"),
  sn_first = ProtoField.uint32("rxe4j.snak.first_psn", "First missing PSN", base.HEX),
  sn_count = ProtoField.uint16("rxe4j.snak.count", "Missing PSNs"),
}
local list = {}
for _, v in pairs(f) do list[#list + 1] = v end
rxe.fields = list

local bth_opcode = Field.new("infiniband.bth.opcode")

local function le32(tvb, at) return tvb(at, 4):le_uint() end

local function add_flow_psn(t, tvb, bth)
  local psn = tvb(bth + 9, 3):uint()
  t:add(f.generation, tvb(bth + 9, 3), bit.rshift(psn, 11))
  t:add(f.sequence, tvb(bth + 9, 3), bit.band(psn, 0x7FF))
end

local function add_reth(t, tvb, at)
  t:add(f.va, tvb(at, 8))
  t:add(f.rkey, tvb(at + 8, 4))
  t:add(f.dmalen, tvb(at + 12, 4))
end

local function add_aeth(t, tvb, at)
  t:add(f.syndrome, tvb(at, 1))
  t:add(f.msn, tvb(at + 1, 3))
end

local function add_tid_list(t, tvb, from, to)
  local n = math.floor((to - from) / 4)
  if n <= 0 then return end
  local lt = t:add(f.entries, tvb(from, n * 4), n)
  for i = 0, n - 1 do
    local e = le32(tvb, from + 4 * i)
    local et = lt:add_le(f.entry, tvb(from + 4 * i, 4))
    et:add(f.entry_idx, tvb(from + 4 * i, 4), bit.band(bit.rshift(e, 22), 0x3FF))
    et:add(f.entry_ctrl, tvb(from + 4 * i, 4), bit.band(bit.rshift(e, 20), 3))
    et:add(f.entry_pages, tvb(from + 4 * i, 4), bit.band(e, 0x7FF))
  end
end

local function tid(t, tvb, bth, op, payload_end)
  local k = bth + 12
  local k0 = le32(tvb, k)
  local k1 = le32(tvb, k + 4)
  local kt = t:add(rxe, tvb(k, 36), "KDETH and TID RDMA extension (36 bytes)")
  local r0 = tvb(k, 4)
  kt:add(f.kver, r0, bit.band(bit.rshift(k0, 30), 3))
  kt:add(f.sh, r0, bit.band(k0, 0x20000000) ~= 0)
  kt:add(f.intr, r0, bit.band(k0, 0x10000000) ~= 0)
  kt:add(f.tidctrl, r0, bit.band(bit.rshift(k0, 26), 3))
  kt:add(f.tid, r0, bit.band(bit.rshift(k0, 16), 0x3FF))
  local om = bit.band(k0, 0x8000) ~= 0
  kt:add(f.om, r0, om)
  local off = bit.band(k0, 0x7FFF)
  kt:add(f.offset, r0, off)
  kt:add(f.offset_bytes, r0, om and off * 64 or off * 4)
  kt:add(f.jkey, tvb(k + 4, 4), bit.band(k1, 0xFFFF))
  kt:add(f.hcrc, tvb(k + 4, 4), bit.band(bit.rshift(k1, 16), 0xFFFF))
  local x = k + 8
  if op == 0xE4 then          -- READ_REQ
    add_reth(kt, tvb, x)
    kt:add(f.flow_psn, tvb(k + 24, 4)); kt:add(f.flow_qp, tvb(k + 28, 4))
    kt:add(f.flow_index, tvb(k + 28, 4), bit.band(bit.rshift(tvb(k + 28, 4):uint(), 11), 0x1F))
  elseif op == 0xE5 then      -- READ_RESP
    add_aeth(kt, tvb, x)
    kt:add(f.verbs_psn, tvb(k + 28, 4))
    add_flow_psn(kt, tvb, bth)
  elseif op == 0xE0 then      -- WRITE_REQ
    add_reth(kt, tvb, x)
  elseif op == 0xE1 then      -- WRITE_RESP
    add_aeth(kt, tvb, x)
    kt:add(f.flow_psn, tvb(k + 24, 4)); kt:add(f.flow_qp, tvb(k + 28, 4))
    kt:add(f.flow_index, tvb(k + 28, 4), bit.band(bit.rshift(tvb(k + 28, 4):uint(), 11), 0x1F))
  elseif op == 0xE7 then      -- ACK
    add_aeth(kt, tvb, x)
    kt:add(f.flow_psn, tvb(k + 20, 4)); kt:add(f.verbs_psn, tvb(k + 24, 4)); kt:add(f.flow_qp, tvb(k + 28, 4))
    add_flow_psn(kt, tvb, bth)
  else                        -- WRITE_DATA(_LAST), RESYNC
    add_flow_psn(kt, tvb, bth)
  end
  kt:add(f.verbs_qp, tvb(k + 32, 4))
  if op == 0xE4 or op == 0xE1 then
    add_tid_list(t, tvb, k + 36, payload_end)
  end
end

local function masked(t, tvb, bth, op)
  local a = bth + 12
  t:add(f.m_va, tvb(a, 8)); t:add(f.m_rkey, tvb(a + 8, 4))
  if op == 0xF0 then
    t:add(f.m_swap, tvb(a + 12, 8)); t:add(f.m_compare, tvb(a + 20, 8))
    t:add(f.m_swap_mask, tvb(a + 28, 8)); t:add(f.m_compare_mask, tvb(a + 36, 8))
  else
    t:add(f.m_add, tvb(a + 12, 8)); t:add(f.m_boundary, tvb(a + 20, 8))
  end
end

local function selective_nak(t, tvb, bth, payload_end)
  local a = bth + 12
  local n = math.floor((payload_end - a) / 4)
  t:add(f.sn_ranges, tvb(a, n * 4), n)
  for i = 0, n - 1 do
    local at = a + 4 * i
    local rt = t:add(tvb(at, 4), string.format("Missing PSNs 0x%06x +%d", tvb(at + 1, 3):uint(),
      tvb(at, 1):uint() + 1))
    rt:add(f.sn_count, tvb(at, 1), tvb(at, 1):uint() + 1)
    rt:add(f.sn_first, tvb(at + 1, 3))
  end
end

function rxe.dissector(tvb, pinfo, tree)
  local fi = bth_opcode()
  if not fi then return end
  local bth = fi.offset
  if bth + 12 > tvb:len() then return end
  local op = fi.value
  local ext = bit.band(tvb(bth + 4, 1):uint(), 1) ~= 0
  local name = OPCODES[op]
  if not ext and not name then return end
  local t = tree:add(rxe, tvb(bth), "rxe4j RoCEv2 extensions")
  if ext then t:add(f.opfn, tvb(bth + 4, 1), true) end
  if not name then return end
  t:add(f.opcode, tvb(bth, 1), name)
  pinfo.cols.info:prepend(name .. " ")
  local payload_end = tvb:len() - 4  -- the ICRC
  local pad = bit.band(bit.rshift(tvb(bth + 1, 1):uint(), 4), 3)
  payload_end = payload_end - pad
  if op >= 0xE0 and op <= 0xE7 and bth + 48 <= tvb:len() then
    tid(t, tvb, bth, op, payload_end)
  elseif (op == 0xF0 and bth + 56 <= tvb:len()) or (op == 0xF1 and bth + 40 <= tvb:len()) then
    masked(t, tvb, bth, op)
  elseif op == 0xF2 and bth + 16 <= payload_end then
    selective_nak(t, tvb, bth, payload_end)
  end
end

register_postdissector(rxe)
