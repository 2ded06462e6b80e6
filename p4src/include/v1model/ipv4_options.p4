// SPDX-License-Identifier: Apache-2.0
//
// v1model: the parser's IPv4 options states (included into QuickNatParser,
// parser.p4). The options are walked first, then extracted whole.

    // Options (ihl 6..15: 1..10 words) are walked first, without consuming
    // them: the walk reads a copy (lookahead of exactly the options' size,
    // left-aligned in opt_scan) one option at a time, so that source routes
    // and malformed lists are refused as swpath refuses them (RFC 7126 sec.
    // 4.3, 4.4: a source-routed packet would be steered past the NAT's
    // rewrite). Then the options are extracted whole, as one varbit.
    state parse_ipv4_options {
        local_md.opt_left = ((bit<8>)hdr.ipv4.ihl - (bit<8>)IPV4_MIN_IHL) << 2;
        transition select(hdr.ipv4.ihl) {
            6:  look_1;
            7:  look_2;
            8:  look_3;
            9:  look_4;
            10: look_5;
            11: look_6;
            12: look_7;
            13: look_8;
            14: look_9;
            default: look_10;
        }
    }

    state look_1 {
        local_md.opt_scan = packet.lookahead<bit<32>>() ++ (bit<288>)0;
        transition scan_option;
    }
    state look_2 {
        local_md.opt_scan = packet.lookahead<bit<64>>() ++ (bit<256>)0;
        transition scan_option;
    }
    state look_3 {
        local_md.opt_scan = packet.lookahead<bit<96>>() ++ (bit<224>)0;
        transition scan_option;
    }
    state look_4 {
        local_md.opt_scan = packet.lookahead<bit<128>>() ++ (bit<192>)0;
        transition scan_option;
    }
    state look_5 {
        local_md.opt_scan = packet.lookahead<bit<160>>() ++ (bit<160>)0;
        transition scan_option;
    }
    state look_6 {
        local_md.opt_scan = packet.lookahead<bit<192>>() ++ (bit<128>)0;
        transition scan_option;
    }
    state look_7 {
        local_md.opt_scan = packet.lookahead<bit<224>>() ++ (bit<96>)0;
        transition scan_option;
    }
    state look_8 {
        local_md.opt_scan = packet.lookahead<bit<256>>() ++ (bit<64>)0;
        transition scan_option;
    }
    state look_9 {
        local_md.opt_scan = packet.lookahead<bit<288>>() ++ (bit<32>)0;
        transition scan_option;
    }
    state look_10 {
        local_md.opt_scan = packet.lookahead<bit<320>>();
        transition scan_option;
    }

    state scan_option {
        transition select(local_md.opt_left, local_md.opt_scan[319:312]) {
            (0, _):   extract_ipv4_options;  // walked them all
            (_, 0):   extract_ipv4_options;  // end of option list
            (_, 1):   skip_nop;
            (_, 131): source_route;          // loose source route
            (_, 137): source_route;          // strict source route
            default:  skip_option;
        }
    }

    state skip_nop {
        local_md.opt_scan = local_md.opt_scan << 8;
        local_md.opt_left = local_md.opt_left - 1;
        transition scan_option;
    }

    state skip_option {
        bit<8> len = local_md.opt_scan[311:304];
        verify(len >= 2 && len <= local_md.opt_left, error.Ipv4BadOption);
        // BMv2 shifts by at most 255 bits: an option of up to 40 bytes
        // (320 bits) is skipped in two halves.
        local_md.opt_scan = local_md.opt_scan << (len << 2) << (len << 2);
        local_md.opt_left = local_md.opt_left - len;
        transition scan_option;
    }

    state source_route {
        verify(false, error.Ipv4SourceRoute);
        transition accept;
    }

    state extract_ipv4_options {
        packet.extract(hdr.ipv4_options,
                       (bit<32>)(((bit<16>)hdr.ipv4.ihl - (bit<16>)IPV4_MIN_IHL) << 5));
        transition parse_ipv4_payload;
    }

