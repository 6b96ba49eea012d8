/* Generated from croqvm/native/faults.py by 'python -m croqvm.native.faults': do not edit. */
#ifndef CQ_RECORD_H
#define CQ_RECORD_H

enum cq_tag {
    CQ_TAG_VALUE = 0,
    CQ_TAG_BUFFER = 1,
    CQ_TAG_TUPLE = 2,
    CQ_TAG_SHAPE = 3,
};

enum cq_label {
    CQ_LABEL_VALUE = 0,
    CQ_LABEL_BUFFER = 1,
    CQ_LABEL_ORIGIN = 2,
    CQ_LABEL_EXTENTS = 3,
    CQ_LABEL_SOURCE = 4,
    CQ_LABEL_DESTINATION = 5,
    CQ_LABEL_DESTINATION_ORIGIN = 6,
    CQ_LABEL_DESTINATION_EXTENTS = 7,
    CQ_LABEL_LOW_PADDING = 8,
    CQ_LABEL_HIGH_PADDING = 9,
    CQ_LABEL_INTERIOR_PADDING = 10,
    CQ_LABEL_PADDING_VALUE = 11,
    CQ_LABEL_BARRIER = 12,
    CQ_LABEL_THREAD_COUNT = 13,
};

#endif
